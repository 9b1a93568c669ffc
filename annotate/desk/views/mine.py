""""My judgments": the annotator's own answers in one study, and editing one of them.

Edits are allowed while the item still needs judgments (n_completed <
annotations_per_item, annotate.desk.submission.can_edit); each goes through the one answer
validator (annotate.studies.answers, via submission.edit) and is written to the AuditLog with the
old and new values, who and when. Answers are shown with the labels the annotator saw
("Response A", "Tie", 4), never as candidate ids.
"""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotate.access import NotAllowed, study_for
from annotate.desk.blinding import blinding_for
from annotate.desk.display import shown_questions
from annotate.desk.submission import AssignmentGone, EditNotAllowed, SubmissionError, can_edit, edit, stored_judgments
from annotate.desk.views.task import _answers_from, _question_context, item_context
from annotate.kinds import assignment_item
from annotate.models import Assignment, Judgment
from evaluation.vocabulary import SKIP_QUESTION, SKIP_REASONS

REASON_LABELS = dict(SKIP_REASONS)


def _answer_rows(study, assignment, judgments):
    """[{"question", "answer"}] with the labels this annotator saw."""
    values = {j.question: j.value for j in judgments}
    questions = _question_context(study, shown_questions(study, assignment_item(assignment), assignment.shown_order),
                                  values, {})
    rows = []
    for q in questions:
        label = next((c["label"] for c in q["choices"] if c["value"] == q["value"]), q["value"])
        rows.append({"question": q["text"], "answer": label})
    return rows


@login_required
@require_GET
def my_judgments(request, slug):
    """The list of the user's answered and skipped items in this study, newest first."""
    study = study_for(request.user, slug, "annotate")
    # First showings only: a test-retest repeat is not listed (annotate/desk/retest.py).
    assignments = list(Assignment.objects.filter(study=study, annotator=request.user, completed_at__isnull=False,
                                                 repeat_of__isnull=True)
                       .select_related("item", "study").order_by("completed_at", "id"))
    judgments: dict[int, list[Judgment]] = {}
    for j in Judgment.objects.filter(study=study, annotator=request.user, repeat_of__isnull=True).order_by("id"):
        judgments.setdefault(j.item_id, []).append(j)
    rows = []
    for number, a in enumerate(assignments, start=1):
        mine = judgments.get(a.item_id, [])
        skip = next((j for j in mine if j.question == SKIP_QUESTION), None)
        rows.append({"number": number, "assignment": a, "submitted_at": a.completed_at,
                     "skipped": REASON_LABELS.get(skip.value, skip.value) if skip else None,
                     "answers": [] if skip else _answer_rows(study, a, mine),
                     "comment": next((j.comment for j in mine if j.comment), ""),
                     "editable": can_edit(a)})
    rows.reverse()
    return render(request, "annotate/my_judgments.html", {"study": study, "rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def edit_judgment(request, slug, pk):
    """The edit form of one answered item (a full page, posted without htmx)."""
    study = study_for(request.user, slug, "annotate")
    assignment = get_object_or_404(Assignment.objects.select_related("item", "study"), pk=pk,
                                   annotator=request.user, study=study, completed_at__isnull=False, skipped=False)
    stored = stored_judgments(assignment)
    values = blinding_for(assignment).values({j.question: j.value for j in stored})  # the form speaks tokens
    comment = next((j.comment for j in stored if j.comment), "")
    errors: dict = {}
    if request.method == "POST":
        values, comment = _answers_from(request.POST), request.POST.get("comment", "")
        try:
            edit(pk, request.user, values, comment, blinded=True)
        except SubmissionError as exc:
            errors = exc.errors
        except (EditNotAllowed, AssignmentGone) as exc:
            messages.error(request, f"Not changed: {exc}.")
            return redirect("annotate-mine", slug=study.slug)
        except NotAllowed as exc:
            raise PermissionDenied("You may no longer annotate this study.") from exc
        else:
            messages.success(request, "Your edit was saved.")
            return redirect("annotate-mine", slug=study.slug)
    elif not can_edit(assignment):
        messages.warning(request, "That item is complete; its answers can no longer be edited.")
        return redirect("annotate-mine", slug=study.slug)
    context = item_context(study, assignment, values=values, errors=errors, mode="edit", comment=comment)
    return render(request, "annotate/edit_judgment.html", context)
