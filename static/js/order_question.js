/* The widget of an order question (`"order": true`: every output put in order, best first).
   An output starts "not ranked yet"; tapping it (or Enter/Space on it) puts it next in the
   order, so a phone ranks by tapping the outputs in order (the last one goes last by
   itself). Ranked outputs move by drag and drop, by their up/down buttons, or with the
   arrow keys while focused (announced in the live region: "Output C moved to position 2
   of 4"); Delete or Backspace (or the undo button) sends one back. With ties allowed, the
   "=" key or the tie button puts an output in the rank of the one above it.
   The hidden field holds the tokens best first, ">" between ranks and "=" inside a tied
   rank, and only once every output is ranked; the submit is held until then. */
(function () {
  "use strict";

  function widgets(root) { return Array.from((root || document).querySelectorAll("fieldset.order-question")); }
  function widgetOf(element) { return element && element.closest ? element.closest("fieldset.order-question") : null; }
  function rankedList(widget) { return widget.querySelector("ol.rank-list"); }
  function pool(widget) { return widget.querySelector("ul.rank-pool"); }
  function rankedItems(widget) { return Array.from(rankedList(widget).children); }
  function poolItems(widget) { return Array.from(pool(widget).children); }
  function allItems(widget) { return rankedItems(widget).concat(poolItems(widget)); }
  function labelOf(item) { return item.dataset.label; }
  function tiesAllowed(widget) { return widget.dataset.ties === "true"; }

  function announce(widget, text) {
    const live = widget.querySelector(".rank-live");
    if (!live) return;
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 30); // a new text, even if it repeats
  }

  /* The ranks as groups of items (a group of two or more: a tie). */
  function groups(widget) {
    const out = [];
    rankedItems(widget).forEach(function (item, index) {
      if (index > 0 && item.dataset.tied === "true") out[out.length - 1].push(item);
      else out.push([item]);
    });
    return out;
  }

  /* Numbers, names, buttons and the hidden value after every change. */
  function refresh(widget) {
    const total = allItems(widget).length;
    const ranked = rankedItems(widget);
    let rank = 0;
    ranked.forEach(function (item, index) {
      if (index === 0) item.dataset.tied = "false";
      const tied = item.dataset.tied === "true";
      if (!tied) rank = index + 1;
      item.querySelector(".rank-pos").textContent = tied ? rank + "=" : String(rank);
      const handle = item.querySelector(".rank-handle");
      handle.setAttribute("aria-label", labelOf(item) + ", position " + (index + 1) + " of " + total +
        (tied ? ", same rank as the one above" : ""));
      item.querySelector(".rank-up").disabled = index === 0;
      item.querySelector(".rank-down").disabled = index === ranked.length - 1;
      const tie = item.querySelector(".rank-tie");
      if (tie) {
        tie.hidden = index === 0;
        tie.setAttribute("aria-pressed", tied ? "true" : "false");
      }
      item.classList.toggle("tied", tied);
    });
    poolItems(widget).forEach(function (item) {
      item.dataset.tied = "false";
      item.classList.remove("tied");
      item.querySelector(".rank-pos").textContent = "";
      item.querySelector(".rank-handle").setAttribute("aria-label", labelOf(item) + ", not ranked yet: press to put it next");
    });
    const done = poolItems(widget).length === 0;
    widget.querySelector(".rank-pool-box").hidden = done;
    widget.querySelector(".rank-empty").hidden = ranked.length > 0;
    const field = widget.querySelector("input.rank-value");
    field.value = done ? groups(widget).map(function (g) {
      return g.map(function (item) { return item.dataset.token; }).join("=");
    }).join(">") : "";
    widget.classList.toggle("complete", done);
    if (done) widget.classList.remove("missing");
    field.dispatchEvent(new Event("change", { bubbles: true })); // drafts and listeners see the new value
  }

  function focusHandle(item) {
    const handle = item && item.querySelector(".rank-handle");
    if (handle) handle.focus();
  }

  /* Puts a pool item next in the strengths; the last one left follows by itself. */
  function place(widget, item) {
    rankedList(widget).appendChild(item);
    let text = labelOf(item) + " placed at position " + rankedItems(widget).length + " of " + allItems(widget).length;
    const left = poolItems(widget);
    if (left.length === 1) {
      rankedList(widget).appendChild(left[0]);
      text += "; " + labelOf(left[0]) + " placed last. Every output is ranked.";
    }
    refresh(widget);
    announce(widget, text);
    focusHandle(poolItems(widget)[0] || item);
  }

  function unplace(widget, item) {
    const ranked = rankedItems(widget);
    const next = ranked[ranked.indexOf(item) + 1];
    if (next && item.dataset.tied !== "true") next.dataset.tied = "false";
    item.dataset.tied = "false";
    pool(widget).appendChild(item);
    refresh(widget);
    announce(widget, labelOf(item) + " is not ranked any more");
    focusHandle(item);
  }

  /* Moves a ranked item to `index` (0-based) in the strengths; it leaves any tie. */
  function moveTo(widget, item, index, quiet) {
    const list = rankedList(widget);
    const ranked = rankedItems(widget);
    const from = ranked.indexOf(item);
    const next = ranked[from + 1];
    if (next && item.dataset.tied !== "true") next.dataset.tied = "false"; // its follower keeps no tie with it
    item.dataset.tied = "false";
    const others = ranked.filter(function (x) { return x !== item; });
    index = Math.max(0, Math.min(index, others.length));
    list.insertBefore(item, others[index] || null);
    if (others[index]) others[index].dataset.tied = "false"; // the one now below it is not tied to it
    refresh(widget);
    if (!quiet) announce(widget, labelOf(item) + " moved to position " + (index + 1) + " of " + allItems(widget).length);
    focusHandle(item);
  }

  function toggleTie(widget, item) {
    const ranked = rankedItems(widget);
    const index = ranked.indexOf(item);
    if (!tiesAllowed(widget) || index <= 0) return;
    item.dataset.tied = item.dataset.tied === "true" ? "false" : "true";
    refresh(widget);
    announce(widget, item.dataset.tied === "true"
      ? labelOf(item) + " now shares a rank with " + labelOf(ranked[index - 1])
      : labelOf(item) + " has a rank of its own again");
    focusHandle(item);
  }

  /* Restores a value (a re-shown form, an edit) from the hidden field. */
  function restore(widget) {
    const value = widget.querySelector("input.rank-value").value;
    if (!value) return;
    const byToken = {};
    allItems(widget).forEach(function (item) { byToken[item.dataset.token] = item; });
    const ranks = value.split(">").map(function (g) { return g.split("="); });
    const named = [].concat.apply([], ranks);
    if (named.length !== allItems(widget).length || named.some(function (t) { return !byToken[t]; })) return;
    ranks.forEach(function (group) {
      group.forEach(function (token, k) {
        byToken[token].dataset.tied = k > 0 && tiesAllowed(widget) ? "true" : "false";
        rankedList(widget).appendChild(byToken[token]);
      });
    });
  }

  function setUp(root) {
    widgets(root).forEach(function (widget) {
      if (widget.dataset.ready === "true") return;
      widget.dataset.ready = "true";
      restore(widget);
      refresh(widget);
    });
  }

  /* ---- Pointer: tap to place, buttons ---- */
  document.addEventListener("click", function (event) {
    const button = event.target.closest ? event.target.closest("button") : null;
    const widget = widgetOf(button);
    if (!widget) return;
    const item = button.closest("li.rank-item");
    if (!item) return;
    const inPool = item.parentElement === pool(widget);
    if (button.classList.contains("rank-handle")) {
      if (inPool) place(widget, item);
      return;
    }
    if (inPool) return;
    const index = rankedItems(widget).indexOf(item);
    if (button.classList.contains("rank-up")) moveTo(widget, item, index - 1);
    else if (button.classList.contains("rank-down")) moveTo(widget, item, index + 1);
    else if (button.classList.contains("rank-undo")) unplace(widget, item);
    else if (button.classList.contains("rank-tie")) toggleTie(widget, item);
  });

  /* ---- Keyboard (capture: before the page's own shortcuts, annotate.js) ---- */
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const handle = event.target.closest ? event.target.closest(".rank-handle") : null;
    const widget = widgetOf(handle);
    if (!widget) return;
    const item = handle.closest("li.rank-item");
    const ranked = rankedItems(widget);
    const index = ranked.indexOf(item);
    if (index < 0) { // in the pool: Enter/Space place it (the button's click); arrows walk the pool
      const left = poolItems(widget);
      const at = left.indexOf(item);
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        focusHandle(left[(at + (event.key === "ArrowDown" ? 1 : left.length - 1)) % left.length]);
      } else if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        event.stopPropagation();
        place(widget, item);
      }
      return;
    }
    let handled = true;
    if (event.key === "ArrowUp") { if (index > 0) moveTo(widget, item, index - 1); }
    else if (event.key === "ArrowDown") { if (index < ranked.length - 1) moveTo(widget, item, index + 1); }
    else if (event.key === "Home") moveTo(widget, item, 0);
    else if (event.key === "End") moveTo(widget, item, ranked.length - 1);
    else if (event.key === "Delete" || event.key === "Backspace") unplace(widget, item);
    else if (event.key === "=" && tiesAllowed(widget)) toggleTie(widget, item);
    else handled = false;
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  }, true);

  /* ---- Drag and drop (mouse): onto the strengths, at the place the pointer is over ---- */
  let dragged = null;
  document.addEventListener("dragstart", function (event) {
    const item = event.target.closest ? event.target.closest("li.rank-item") : null;
    if (!item || !widgetOf(item)) return;
    dragged = item;
    item.classList.add("dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", item.dataset.label);
  });
  document.addEventListener("dragend", function () {
    if (dragged) dragged.classList.remove("dragging");
    dragged = null;
  });
  function dropIndex(widget, y) {
    const others = rankedItems(widget).filter(function (x) { return x !== dragged; });
    for (let k = 0; k < others.length; k += 1) {
      const box = others[k].getBoundingClientRect();
      if (y < box.top + box.height / 2) return k;
    }
    return others.length;
  }
  document.addEventListener("dragover", function (event) {
    const widget = widgetOf(event.target);
    if (!dragged || widget !== widgetOf(dragged)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
  });
  document.addEventListener("drop", function (event) {
    const widget = widgetOf(event.target);
    if (!dragged || widget !== widgetOf(dragged)) return;
    event.preventDefault();
    const item = dragged;
    const index = event.target.closest(".rank-pool-box") && item.parentElement === pool(widget)
      ? null : dropIndex(widget, event.clientY);
    if (index === null) return;
    if (item.parentElement === pool(widget)) {
      rankedList(widget).insertBefore(item, rankedItems(widget)[index] || null);
      if (poolItems(widget).length === 1) rankedList(widget).appendChild(poolItems(widget)[0]);
      refresh(widget);
      announce(widget, labelOf(item) + " placed at position " + (rankedItems(widget).indexOf(item) + 1) + " of " +
        allItems(widget).length);
      focusHandle(item);
    } else {
      moveTo(widget, item, index);
    }
  });

  /* ---- Submit: held until every output is ranked ---- */
  document.body.addEventListener("htmx:confirm", function (event) {
    const form = event.detail.elt;
    if (!form || (form.id !== "item-form" && form.id !== "edit-form")) return;
    const open = widgets(form).filter(function (w) { return !w.querySelector("input.rank-value").value; });
    if (!open.length) return;
    event.preventDefault();
    open.forEach(function (w) { w.classList.add("missing"); });
    const left = poolItems(open[0]).length;
    announce(open[0], "Rank every output first: " + left + " not ranked yet.");
    const status = document.getElementById("status");
    if (status) {
      const notice = document.createElement("span");
      notice.className = "notice error";
      notice.textContent = "Rank every output first (" + left + " not ranked yet).";
      status.replaceChildren(notice);
    }
    focusHandle(poolItems(open[0])[0]);
  });
  document.addEventListener("submit", function (event) { // the edit page posts without htmx
    const form = event.target;
    if (form.hasAttribute("hx-post")) return; // htmx:confirm above holds it
    const open = widgets(form).filter(function (w) { return !w.querySelector("input.rank-value").value; });
    if (!open.length) return;
    event.preventDefault();
    open[0].classList.add("missing");
    announce(open[0], "Rank every output first.");
    focusHandle(poolItems(open[0])[0]);
  });

  document.addEventListener("humeval:restored", function (event) { // kept answers after a lost session (annotate.js)
    const widget = widgetOf(event.target);
    if (!widget) return;
    restore(widget);
    refresh(widget);
  });
  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.body.addEventListener("htmx:afterSwap", function (event) { setUp(event.detail.target); });
  if (document.readyState !== "loading") setUp(document);
})();
