"""The task page /annotate/<slug>/ and its htmx partials.

The page renders the current item; answering posts the form with htmx, and the response
is the next item's partial (plus the progress line, swapped out-of-band), so the page
never reloads. Errors re-render the same item with the answers kept. The same partials
serve the edit form for the previous item while it is still open for edits.
"""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate.access import NotAllowed, participant_scope, study_for
from annotate.desk.assignment import desk_for, next_for, open_assignment, release_expired
from annotate.desk.blinding import blinding_for
from annotate.desk.display import annotator_view, study_questions
from annotate.desk.drafts import answer_handle, item_handle
from annotate.desk.progress import annotator_progress
from annotate.desk.rendering import render_markdown
from annotate.desk.submission import (
    MAX_EXTENSIONS,
    AssignmentGone,
    EditNotAllowed,
    SubmissionError,
    can_edit,
    edit,
    stored_judgments,
    submit,
)
from annotate.kinds import get_kind, study_config
from annotate.models import Assignment
from annotate.participants.participation import flow_redirect
from evaluation.vocabulary import SKIP_REASONS, TIE

FIELD_PREFIX = "q:"


def _study(request, slug):
    """The study of the URL, if the user may annotate it (404 if they may not see it)."""
    return study_for(request.user, slug, "annotate")


def _question_context(study, questions, values, errors, real_ids=None):
    """Questions as the templates need them: options with the kind's labels and keyboard
    keys (StudyKind.option_label, option_keys; `real_ids` maps a question's token to its id)."""
    kind, real_ids = get_kind(study.kind), real_ids or {}
    out = []
    for q in questions:
        entry = {"id": q["id"], "text": q["text"], "field": FIELD_PREFIX + q["id"],
                 "value": str(values.get(q["id"], "")), "error": errors.get(q["id"]), "choices": []}
        if "options" in q:
            real_id = real_ids.get(q["id"], q["id"])
            for i, option in enumerate(q["options"]):
                shown_option = TIE if option == TIE else f"option {i}"  # tokens are no option ids
                entry["choices"].append({"value": option, "label": kind.option_label(i, shown_option),
                                         "keys": kind.option_keys(real_id, i, shown_option)})
            entry["kind"] = "order" if q.get("order") else "choice"  # order: every option ranked (order_question.js)
            entry["ties"] = bool(q.get("ties"))
        else:
            lo, hi = q["scale"]
            entry["choices"] = [{"value": str(n), "label": str(n), "keys": (str(n),) if n <= 9 else ()}
                                for n in range(lo, hi + 1)]
            entry["kind"] = "rating"
            entry["low"], entry["high"] = lo, hi
        out.append(entry)
    return out


def item_context(study, assignment, values=None, errors=None, mode="submit", comment=""):
    """Everything a kind's partial needs to draw one assignment, blinded: field names and
    values are the assignment's tokens (annotate.desk.blinding), and so are the keys of `values`
    and `errors` (as the form posted them)."""
    values, errors = values or {}, errors or {}
    view = annotator_view(assignment)
    blinding = blinding_for(assignment)
    questions = _question_context(study, view["questions"], values, errors, blinding.questions)
    kind, config = get_kind(study.kind), study_config(study)
    for q in questions:  # the drafts' answer handles: stable across this item's assignments
        real_question = blinding.questions.get(q["id"], q["id"])
        for c in q["choices"]:
            c["draft"] = answer_handle(assignment.item_id, assignment.annotator_id, real_question,
                                       blinding.options.get(c["value"], c["value"]))
    display = kind.page_display(view["item"], {q["id"]: q for q in questions}, kind.option_labels())
    return {
        "study": study, "assignment": assignment, "item": display, "questions": questions,
        "mode": mode, "errors": errors, "form_error": errors.get("answers") or errors.get("seconds"),
        "partial": kind.template, "inline_questions": kind.inline_questions, "scale_words": kind.scale_words,
        "comment_mode": kind.comment_mode(config), "comment_label": kind.comment_label(config),
        # No lost work (static/js/drafts.js): the draft's key, the countdown, "can't judge", a comment.
        "draft_key": item_handle(assignment.item_id, assignment.annotator_id),
        "can_extend": assignment.extensions < MAX_EXTENSIONS,
        "skip_reasons": SKIP_REASONS, "comment": comment,
        # Texts and questions side by side on wide screens when an item asks several questions.
        "side_by_side": len(questions) > 1 and not get_kind(study.kind).inline_questions,
    }


def key_help(study) -> dict:
    """The shortcuts the keyboard help lists for this study's kind only: {"choice": bool,
    "tie": bool, "rating": (lo, hi) or None}, from the questions of its first item."""
    item = study.items.order_by("position").first()
    questions = study_questions(study, item.data) if item else []
    scales = [q["scale"] for q in questions if "scale" in q]
    rating = (max(0, min(s[0] for s in scales)), min(9, max(s[1] for s in scales))) if scales else None
    return {"choice": any("options" in q for q in questions), "tie": study.allow_tie, "rating": rating,
            "lines": get_kind(study.kind).key_help(study_config(study))}


def _answers_from(post):
    return {key[len(FIELD_PREFIX):]: value for key, value in post.items() if key.startswith(FIELD_PREFIX)}


def _desk(request, slug):
    """The request's one access decision (annotate.desk.assignment.Desk): 404 or 403 as study_for."""
    desk = desk_for(request.user, slug)
    desk.refuse("annotate")
    return desk


def _render_next(request, desk, notice=None, previous=None, level="ok"):
    """The partial for the user's current/next item (or the done message). `level` (ok,
    warning, error) styles the notice: a refusal must not look like "Saved.". `previous`:
    the assignment just submitted, with its item's n_completed as the submit left it."""
    study = desk.study
    _, assignment = next_for(request.user, desk=desk)
    scope = participant_scope(request)
    if assignment is None and (url := flow_redirect(scope, study, request.user)):
        return HttpResponseClientRedirect(url)  # a participant's items are done: on to the end of the flow
    context = item_context(study, assignment) if assignment else {"study": study, "assignment": None}
    context.update(notice=notice, notice_level=level, lean=scope == study.slug,
                   previous=previous if previous is not None and can_edit(previous) else None,
                   progress=annotator_progress(study, request.user), oob=True)
    return render(request, "annotate/_item.html", context)


@login_required
@require_GET
def task(request, slug):
    """The whole task page. A GET reserves nothing (issue 14 item 12: another site could
    make a logged-in annotator's browser fetch it): it shows the open assignment if there
    is one, else a Start button that POSTs (CSRF) to `next_item`."""
    study = _study(request, slug)
    if url := flow_redirect(participant_scope(request), study, request.user):
        return redirect(url)  # a participant outside the items step (annotate/participants/participation.py)
    release_expired(study)  # an expired reservation is free again: else the page may say "All done"
    assignment = open_assignment(study, request.user)
    context = task_context(study, assignment, lean=participant_scope(request) == slug,
                           progress=annotator_progress(study, request.user))
    return render(request, "annotate/task.html", context)


def task_context(study, assignment, *, lean, progress, preview=False, values=None, errors=None,
                 extra=None):
    """The whole task page's context. `lean`: a participant's page (no "My judgments", no
    keyboard help on touch screens, the countdown only in its last 5 minutes); `preview`:
    a researcher's preview of it (annotate/participants/views.py), whose forms post to
    `extra`'s URLs and store nothing."""
    context = (item_context(study, assignment, values=values, errors=errors) if assignment
               else {"study": study, "assignment": None})
    context.update(progress=progress, instructions_html=render_markdown(study.instructions),
                   show_instructions=progress["done"] == 0, oob=False,
                   start=assignment is None and progress["remaining"] > 0, keys=key_help(study), lean=lean,
                   preview=preview, **(extra or {}))
    return context


@login_required
@require_POST
def next_item(request, slug):
    """htmx: the current or next item (the Start button, after an edit, or to skip back
    from one). Without htmx (the Start form with scripts off): reserve, then show the page."""
    desk = _desk(request, slug)
    if not request.htmx:
        next_for(request.user, desk=desk)
        return redirect("annotate-task", slug=slug)
    return _render_next(request, desk)


@login_required
@require_POST
def submit_item(request, slug, pk):
    """htmx: submit one item's answers, then show the next item. Idempotent: a repeat of
    an already stored submit just shows the next item."""
    desk = _desk(request, slug)
    study = desk.study
    answers = _answers_from(request.POST)
    try:  # with the desk, another study's assignment is not found (AssignmentGone)
        assignment, _, created = submit(pk, request.user, answers, request.POST.get("seconds"),
                                        comment=request.POST.get("comment"), blinded=True, desk=desk,
                                        pastes=request.POST.get("pastes"),
                                        focus_losses=request.POST.get("focus_losses"))
    except SubmissionError as exc:
        assignment = get_object_or_404(Assignment.objects.select_related("item"), pk=pk, annotator=request.user)
        context = item_context(study, assignment, values=answers, errors=exc.errors,
                               comment=request.POST.get("comment", ""))
        context.update(progress=annotator_progress(study, request.user), oob=True, notice_level="error",
                       notice=("Please answer every question before submitting."
                               if set(exc.errors.values()) <= {"not answered"}
                               else "Please correct the answers marked below."))
        return render(request, "annotate/_item.html", context)
    except AssignmentGone:
        return _render_next(request, desk, level="warning", notice="That item had expired and went back "
                                                                   "to the pool. Here is your next item.")
    return _render_next(request, desk, notice="Saved." if created else "Already saved.", previous=assignment)


@login_required
@require_http_methods(["GET", "POST"])
def edit_item(request, slug, pk):
    """htmx: GET the edit form of a submitted item; POST saves the edit (audited)."""
    desk = _desk(request, slug)
    study = desk.study
    assignment = get_object_or_404(Assignment.objects.select_related("item", "study"), pk=pk,
                                   annotator=request.user, study=study)
    if request.method == "GET":
        if not can_edit(assignment):
            return _render_next(request, desk, level="warning",
                                notice="That item is complete; it can no longer be edited.")
        stored = stored_judgments(assignment)
        values = blinding_for(assignment).values({j.question: j.value for j in stored})
        context = item_context(study, assignment, values=values, mode="edit",
                               comment=next((j.comment for j in stored if j.comment), ""))
        context.update(progress=annotator_progress(study, request.user), oob=True)
        return render(request, "annotate/_item.html", context)
    answers = _answers_from(request.POST)
    try:
        edit(pk, request.user, answers, request.POST.get("comment"), blinded=True)
    except SubmissionError as exc:
        context = item_context(study, assignment, values=answers, errors=exc.errors, mode="edit",
                               comment=request.POST.get("comment", ""))
        context.update(progress=annotator_progress(study, request.user), oob=True)
        return render(request, "annotate/_item.html", context)
    except (EditNotAllowed, AssignmentGone) as exc:
        return _render_next(request, desk, notice=f"Not changed: {exc}.", level="error")
    except NotAllowed as exc:
        raise PermissionDenied("You may no longer annotate this study.") from exc
    return _render_next(request, desk, notice="Your edit was saved.")
