/* No lost work on the task page: answers ticked so far (and the comment) are kept in
   localStorage under the study and the item's handle, restored when the item is shown
   again (reload, expiry, new session) and cleared once it is sent or skipped; plus the
   countdown to the reservation's expiry. htmx does the requests (Extend, Skip).
   A ticked answer is kept as its radio's data-draft handle (annotate/desk/drafts.py), not its
   name and value: those are the assignment's blinding tokens, new with every assignment. */
(function () {
  "use strict";
  const PREFIX = "humeval:draft:";

  function study() {
    const task = document.querySelector(".task");
    return task ? (task.dataset.study || location.pathname) : location.pathname;
  }
  function keyOf(handle) { return PREFIX + study() + ":" + handle; }
  function draftForm() {
    const form = document.getElementById("item-form");
    return form && form.dataset.mode !== "edit" && form.dataset.draftKey ? form : null;
  }
  function read(handle) {
    try { return JSON.parse(localStorage.getItem(keyOf(handle)) || "null"); } catch (e) { return null; }
  }
  function save(form) {
    const draft = {answers: [], text: {}};
    form.querySelectorAll("input[type=radio]:checked").forEach(function (field) {
      if (field.dataset.draft) draft.answers.push(field.dataset.draft);
    });
    form.querySelectorAll("textarea").forEach(function (field) {
      if (field.value !== "") draft.text[field.name] = field.value;
    });
    try {
      if (draft.answers.length || Object.keys(draft.text).length) localStorage.setItem(keyOf(form.dataset.draftKey), JSON.stringify(draft));
      else localStorage.removeItem(keyOf(form.dataset.draftKey));
    } catch (e) { /* storage full or disabled: nothing to keep */ }
  }
  function clear(handle) {
    try { localStorage.removeItem(keyOf(handle)); } catch (e) { /* disabled */ }
  }
  function restore() {
    const form = draftForm();
    if (!form) return;
    const draft = read(form.dataset.draftKey);
    if (!draft || typeof draft !== "object") return;
    let restored = false;
    (Array.isArray(draft.answers) ? draft.answers : []).forEach(function (handle) {
      const field = form.querySelector("input[type=radio][data-draft='" + CSS.escape(String(handle)) + "']");
      // A question already ticked (by the page, or annotate.js after a lost session) keeps its answer.
      if (field && !form.querySelector("input[name='" + CSS.escape(field.name) + "']:checked")) {
        field.checked = true;
        restored = true;
      }
    });
    const text = draft.text && typeof draft.text === "object" ? draft.text : {};
    Object.keys(text).forEach(function (name) {
      form.querySelectorAll("textarea[name='" + CSS.escape(name) + "']").forEach(function (field) {
        if (!field.value) {
          field.value = text[name];
          restored = true;
        }
      });
    });
    if (restored) {
      const note = document.createElement("p");
      note.className = "draft-note muted small";
      note.textContent = "Your earlier answers on this item were restored from this browser.";
      (form.querySelector(".item-head") || form.querySelector(".item-title")).after(note);
    }
  }
  document.addEventListener("change", function (event) {
    const form = draftForm();
    if (form && form.contains(event.target)) save(form);
  });
  document.addEventListener("input", function (event) {
    const form = draftForm();
    if (form && event.target.tagName === "TEXTAREA" && form.contains(event.target)) save(form);
  });

  /* Cleared after a successful send: the response shows another item (or none). */
  let sending = null;
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    const elt = event.detail.elt;
    if (elt && (elt.id === "item-form" || elt.id === "skip-form")) sending = elt.dataset.draftKey || null;
  });
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "item-area") return;
    const form = document.getElementById("item-form");
    if (sending && event.detail.xhr && event.detail.xhr.status < 400 && (!form || form.dataset.draftKey !== sending)) {
      clear(sending);
    }
    sending = null;
    restore();
    startCountdown();
  });

  /* ---- Countdown to the reservation's expiry ---- */
  let ticker = null;
  const LEAN_COUNTDOWN_MS = 5 * 60 * 1000;
  function left(ms) {
    const total = Math.max(0, Math.floor(ms / 1000));
    const minutes = Math.floor(total / 60);
    const seconds = total % 60;
    return minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
  }
  function tick() {
    const box = document.getElementById("countdown");
    if (!box || box.dataset.expired) return;
    const ms = Date.parse(box.dataset.expires) - Date.now();
    const text = box.querySelector(".countdown-left");
    if (ms <= 0) {
      box.dataset.expired = "true";
      box.hidden = false;
      box.querySelector(".countdown-text").textContent = "This item's reservation has expired. Your ticked answers " +
        "are kept in this browser: reload the page to continue.";
      const button = document.getElementById("extend-button");
      if (button) button.remove();
      return;
    }
    if (text) text.textContent = left(ms);
    box.classList.toggle("urgent", ms < 2 * 60 * 1000);
    if (box.dataset.lean) box.hidden = ms > LEAN_COUNTDOWN_MS; // a participant sees it only near the end
  }
  function startCountdown() {
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
    if (!document.getElementById("countdown")) return;
    tick();
    ticker = setInterval(tick, 1000);
  }
  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (event.detail.target && event.detail.target.id === "countdown") startCountdown();
  });

  /* Enter inside the skip box must not submit the answers form (annotate.js). */
  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && event.target.closest && event.target.closest("#skip-form")) {
      event.stopPropagation();
    }
  }, true);

  document.addEventListener("DOMContentLoaded", function () {
    restore();
    startCountdown();
  });
})();
