"""htmx actions on the task page's current item, besides submitting it:

- "Can't judge this" (`skip_item`): records the skip with its reason and optional
  comment (annotate.desk.submission.skip), then shows the next item;
- "Extend" (`extend_item`): one more assignment timeout (annotate.desk.submission.extend),
  answering the refreshed countdown.
"""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from annotate.access import NotAllowed, study_for
from annotate.desk.submission import MAX_EXTENSIONS, AssignmentGone, SkipRefused, SubmissionError, extend, skip
from annotate.desk.views.task import _desk, _render_next
from annotate.models import Assignment


def countdown_context(assignment) -> dict:
    """What templates/annotate/_countdown.html needs."""
    return {"assignment": assignment, "can_extend": assignment.extensions < MAX_EXTENSIONS}


@login_required
@require_POST
def skip_item(request, slug, pk):
    """htmx: "I can't judge this" with a reason; the next item comes back. Idempotent."""
    desk = _desk(request, slug)
    if not Assignment.objects.filter(pk=pk, study=desk.study).exists():
        return _render_next(request, desk, level="warning", notice="That item is no longer yours.")
    try:
        _, _, created = skip(pk, request.user, request.POST.get("reason"), request.POST.get("comment"),
                             request.POST.get("seconds"))
    except NotAllowed as exc:
        raise PermissionDenied("You may no longer annotate this study.") from exc
    except SubmissionError as exc:
        return _render_next(request, desk, level="error",
                            notice="Not skipped: " + "; ".join(f"{k}: {v}" for k, v in exc.errors.items()) + ".")
    except (AssignmentGone, SkipRefused):
        return _render_next(request, desk, level="warning", notice="That item was already answered or has expired.")
    return _render_next(request, desk, level="ok",
                        notice="Skipped: the item goes to someone else." if created else "Already skipped.")


@login_required
@require_POST
def extend_item(request, slug, pk):
    """htmx: keep the current item one more timeout; answers the countdown partial."""
    study = study_for(request.user, slug, "annotate")
    assignment = get_object_or_404(Assignment, pk=pk, study=study, annotator=request.user)
    try:
        assignment, extended = extend(pk, request.user)
    except NotAllowed as exc:
        raise PermissionDenied("You may no longer annotate this study.") from exc
    except AssignmentGone:
        context = {**countdown_context(assignment), "expired": True}
        return render(request, "annotate/_countdown.html", context)
    context = {**countdown_context(assignment), "extended": extended}
    return render(request, "annotate/_countdown.html", context)
