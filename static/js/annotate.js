/* The task page: keyboard shortcuts, a timer that excludes time the tab was hidden,
   the minimum-time warning, and checks before a submit. htmx does the requests.
   The edit page of My judgments (#edit-form, a plain POST) uses its keyboard shortcuts only. */
(function () {
  "use strict";

  /* ---- Timer: visible milliseconds since the item was shown (Page Visibility API) ---- */
  let visibleMs = 0;
  let since = null; // performance.now() when the page last became visible, null while hidden
  let shownAssignment = null;
  let warned = false;

  function startTimer() {
    visibleMs = 0;
    pastes = 0;
    focusLosses = 0;
    warned = false;
    since = document.visibilityState === "visible" ? performance.now() : null;
  }
  function elapsedSeconds() {
    return (visibleMs + (since === null ? 0 : performance.now() - since)) / 1000;
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden" && since !== null) {
      visibleMs += performance.now() - since;
      since = null;
    } else if (document.visibilityState === "visible" && since === null) {
      since = performance.now();
    }
  });
  window.humevalTimer = { elapsedSeconds: elapsedSeconds };

  /* ---- Free-text fields: pastes into them, and the page losing focus while one is being
     written (stored with the judgment: a flag for the researcher, never a rejection) ---- */
  let pastes = 0;
  let focusLosses = 0;
  function inFreeText(element) { return !!(element && element.closest && element.closest("#item-form textarea")); }
  document.addEventListener("paste", function (event) { if (inFreeText(event.target)) pastes += 1; }, true);
  window.addEventListener("blur", function () { if (inFreeText(document.activeElement)) focusLosses += 1; });

  /* ---- Questions ---- */
  function itemForm() { return document.getElementById("item-form") || document.getElementById("edit-form"); }
  function questions() {
    const form = itemForm();
    return form ? Array.from(form.querySelectorAll("fieldset.question")) : [];
  }
  function answered(fieldset) { return fieldset.querySelector("input:checked") !== null; }
  function unanswered() { return questions().filter(function (q) { return !answered(q); }); }
  function focusQuestion(fieldset) {
    const input = fieldset.querySelector("input:checked") || fieldset.querySelector("input");
    if (input) input.focus();
  }
  function currentQuestion() {
    const active = document.activeElement;
    const inside = active && active.closest ? active.closest("fieldset.question") : null;
    return inside || unanswered()[0] || questions()[0] || null;
  }
  function advanceFrom(fieldset) {
    const all = questions();
    const after = all.slice(all.indexOf(fieldset) + 1).filter(function (q) { return !answered(q); });
    const next = after[0] || unanswered()[0];
    if (next) { focusQuestion(next); return; }
    const button = itemForm().querySelector("button[type=submit]");
    if (button) button.focus();
  }
  function announce(text, level) { // level: "ok" (default), "warning" or "error" (styled apart from "Saved.")
    const status = document.getElementById("status");
    if (!status) return;
    const notice = document.createElement("span");
    notice.className = "notice " + (level || "ok");
    notice.textContent = text;
    status.replaceChildren(notice);
  }

  /* ---- Answers kept across a lost session (issue 14 item 17) ----
     A submit is kept in localStorage (study + assignment) until the server has answered it;
     if the session was lost, the server sends the page to the login (401 + HX-Redirect) and,
     back on the same item, the answers are ticked again. Only tokens are stored. */
  function keptKey(form) {
    const task = document.querySelector(".task");
    return "humeval:answers:" + (task ? task.dataset.study : "") + ":" + form.dataset.assignment;
  }
  function keepAnswers(form) {
    const answers = {};
    form.querySelectorAll("input[type=radio]:checked").forEach(function (input) { answers[input.name] = input.value; });
    form.querySelectorAll("input.rank-value").forEach(function (input) { // an order (static/js/order_question.js)
      if (input.value) answers[input.name] = input.value;
    });
    try { localStorage.setItem(keptKey(form), JSON.stringify(answers)); } catch (e) { /* storage off or full */ }
  }
  function forgetAnswers(form) {
    try { localStorage.removeItem(keptKey(form)); } catch (e) { /* storage off */ }
  }
  function restoreAnswers(form) {
    let answers = null;
    try { answers = JSON.parse(localStorage.getItem(keptKey(form)) || "null"); } catch (e) { answers = null; }
    if (!answers || typeof answers !== "object") return false;
    let restored = 0;
    form.querySelectorAll("input[type=radio]").forEach(function (input) {
      if (Object.prototype.hasOwnProperty.call(answers, input.name) && answers[input.name] === input.value) {
        input.checked = true;
        restored += 1;
      }
    });
    form.querySelectorAll("input.rank-value").forEach(function (input) {
      if (Object.prototype.hasOwnProperty.call(answers, input.name) && !input.value) {
        input.value = answers[input.name];
        input.dispatchEvent(new CustomEvent("humeval:restored", { bubbles: true })); // order_question.js redraws it
        restored += 1;
      }
    });
    return restored > 0;
  }
  function keptForms(event) {
    const form = event.detail.elt;
    return form && form.id === "item-form" && form.dataset.mode === "submit" ? form : null;
  }
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    const form = keptForms(event);
    if (form) keepAnswers(form);
  });
  document.body.addEventListener("htmx:beforeOnLoad", function (event) { // before the swap detaches the form
    const form = keptForms(event);
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (form && status >= 200 && status < 300) forgetAnswers(form); // answered (saved, or shown again with errors)
  });

  /* ---- A new item arrived (page load or htmx swap) ---- */
  function itemShown(initial) {
    const form = itemForm();
    if (form && form.dataset.mode === "submit" && restoreAnswers(form)) {
      announce("Your answers from before you were signed out are ticked again. Check them, then submit.", "warning");
    }
    const id = form ? form.dataset.assignment + ":" + form.dataset.mode : null;
    if (id !== shownAssignment) { // a re-render of the same item (errors) keeps its clock and instructions
      shownAssignment = id;
      startTimer();
      if (!initial && form && form.dataset.mode === "submit" && !form.dataset.firstItem) {
        const instructions = document.getElementById("instructions");
        if (instructions) instructions.open = false; // read on the first item; the texts get the first screen now
      }
    }
    const title = document.querySelector("#item-area .item-title");
    if (title) title.focus({ preventScroll: Boolean(initial) }); // first load: keep the instructions in view
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector("#item-area .item-title")) itemShown(true);
    const help = document.getElementById("show-keys");
    if (help) help.addEventListener("click", function () { document.getElementById("keys-dialog").showModal(); });
  });
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "item-area") itemShown(false);
  });

  /* ---- Before a submit: everything answered, minimum time, seconds filled in ---- */
  document.body.addEventListener("htmx:confirm", function (event) {
    const form = event.detail.elt;
    if (!form || form.id !== "item-form") return;
    const missing = unanswered();
    questions().forEach(function (q) { q.classList.toggle("missing", !answered(q)); });
    if (missing.length) {
      event.preventDefault();
      announce("Please answer " + missing.length + " more question" + (missing.length > 1 ? "s" : "") + " first.", "error");
      focusQuestion(missing[0]);
      return;
    }
    const seconds = elapsedSeconds();
    form.querySelector("input[name=seconds]").value = seconds.toFixed(2);
    if (form.querySelector("textarea")) { // reported only where there is free text
      form.querySelector("input[name=pastes]").value = String(pastes);
      form.querySelector("input[name=focus_losses]").value = String(focusLosses);
    }
    const minimum = parseFloat(form.dataset.minSeconds);
    if (form.dataset.mode !== "edit" && minimum > 0 && seconds < minimum && !warned) {
      event.preventDefault();
      warned = true;
      const warning = document.getElementById("fast-warning");
      warning.textContent = "You spent only " + Math.round(seconds) + " s on this item; this study asks for at least " +
        Math.round(minimum) + " s. Please check your answers, then press Enter again to submit.";
      warning.hidden = false;
    }
  });
  ["htmx:sendError", "htmx:responseError"].forEach(function (name) {
    document.body.addEventListener(name, function () {
      announce("Your answer could not be sent (network or server problem). It is not lost: press Enter to try again.", "error");
    });
  });

  /* ---- Keyboard ---- */
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const dialog = document.getElementById("keys-dialog");
    if (dialog && dialog.open) return; // Esc closes it natively
    const target = event.target;
    if (target.matches && target.matches("textarea, select, [contenteditable], input:not([type=radio]):not([type=hidden])")) return;
    if (event.key === "?") {
      if (dialog) { event.preventDefault(); dialog.showModal(); }
      return;
    }
    const form = itemForm();
    if (!form) return;
    if (event.key === "Enter") {
      if (target.matches && target.matches("button, a, summary")) return; // they act on Enter themselves
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    const current = currentQuestion();
    if (!current) return;
    const key = event.key.toLowerCase();
    function keyed(scope) {
      return Array.from(scope.querySelectorAll("input[type=radio]")).find(function (radio) {
        return (radio.dataset.keys || "").split(" ").indexOf(key) !== -1;
      });
    }
    // The current question's key first; else, from a choice, another choice question's key
    // (a kind that gives each question its own keys: best 1-6, worst q-y). Rating keys act
    // only in their own question.
    const onChoice = current.classList.contains("choice");
    const input = keyed(current) || (onChoice ? Array.from(form.querySelectorAll("fieldset.question.choice"))
      .map(keyed).find(Boolean) : undefined);
    if (!input) return;
    const fieldset = input.closest("fieldset.question");
    event.preventDefault();
    input.checked = true;
    fieldset.classList.remove("missing");
    input.dispatchEvent(new Event("change", { bubbles: true }));
    advanceFrom(fieldset);
  });
})();
