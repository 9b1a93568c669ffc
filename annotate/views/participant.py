"""Participant pages: `/p/<slug>/` (the link a recruiting platform opens), the study flow
`/p/<slug>/go/` (consent, instructions, pre questions, practice, then the task page,
post questions and the completion page) and `/p/<slug>/preview/` (the same pages for the
study's researchers and admins, writing nothing).

The session a link signs in is scoped to its study (annotate/access.py,
ParticipantScopeMiddleware) and expires after HUMEVAL_PARTICIPANT_SESSION_HOURS.
"""
from django.conf import settings
from django.contrib.auth import login, logout
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from annotate.access import SCOPE_KEY, may_read, participant_scope
from annotate.blinding import blinding_for
from annotate.models import DRAFT, OPEN, Assignment, Item, Participant, Study
from annotate.ordering import shown_order_for
from annotate.participation import (
    BadLink,
    completion_redirect,
    join,
    link_ids,
    next_step,
    participant_state,
    question_answers,
)
from annotate.rendering import render_markdown
from annotate.submission import SubmissionError, checked_answers
from annotate.views.task import FIELD_PREFIX, item_context

PREVIEW_KEY = "participant_preview"  # session: {slug: preview state}


def _study_or_404(slug):
    """The study of a participant URL; drafts do not exist for participants."""
    study = Study.objects.filter(slug=slug).exclude(status=DRAFT).first()
    if study is None:
        raise Http404("No such study.")
    return study


@require_GET
def entry(request, slug):
    """The link a platform opens: create or resume the participant, sign them in for
    this study only, and start (or resume) the flow. 400 on a missing or malformed id."""
    study = _study_or_404(slug)
    if not any(names[0] in request.GET for names in _platform_params()):
        if participant_scope(request) == slug:
            return redirect("participant-flow", slug=slug)
        return HttpResponseBadRequest("This link names no participant (PROLIFIC_PID, workerId or pid).")
    try:
        ids = link_ids(request.GET)
    except BadLink as exc:
        return HttpResponseBadRequest(f"Bad participant link: {exc}.")
    existing = Participant.objects.filter(study=study, user__username=ids.username).first()
    if existing is None and study.status != OPEN:
        return _closed_page(request, study)
    participant = existing or join(study, ids)
    if request.user != participant.user:
        logout(request)
        login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SCOPE_KEY] = {"study": slug, "user": participant.user.pk}
    request.session.set_expiry(settings.HUMEVAL_PARTICIPANT_SESSION_HOURS * 3600)
    return redirect("participant-flow", slug=slug)


def _platform_params():
    from annotate.participation import PLATFORMS

    return PLATFORMS.values()


def _closed_page(request, study):
    return render(request, "participant/closed.html", {"study": study}, status=200)


@require_http_methods(["GET", "POST"])
def flow(request, slug):
    """The participant's current step; POST answers the step's form."""
    if participant_scope(request) != slug:
        raise Http404("No participant session for this study.")
    study = _study_or_404(slug)
    participant = Participant.objects.select_related("user").filter(study=study, user=request.user).first()
    if participant is None:  # removed in the admin since
        raise Http404("No participant session for this study.")
    if participant.declined_at:
        return render(request, "participant/declined.html", {"study": study})
    step = next_step(study, participant_state(participant), participant.user)
    if study.status != OPEN and step in ("items", "post", "done") and participant.finished_at is None:
        return _closed_page(request, study)  # paused or closed: nothing more now, nothing finished
    if request.method == "POST":
        return _post_step(request, study, _Store(participant), step)
    if step == "items":
        return redirect("annotate-task", slug=slug)
    if step == "done":
        return _finish(request, study, _Store(participant))
    return _render_step(request, study, step, _Store(participant))


class _Store:
    """Where a flow's progress is kept: the Participant row, or (preview) the session."""

    def __init__(self, participant=None, session=None, slug=None):
        self.participant, self.session, self.slug = participant, session, slug

    @property
    def preview(self):
        return self.participant is None

    def state(self):
        if self.participant is not None:
            return participant_state(self.participant)
        return self.session.get(PREVIEW_KEY, {}).get(self.slug, {})

    def update(self, **values):
        if self.participant is not None:
            now = timezone.now()
            fields = {"consented": ("consented_at", now), "declined": ("declined_at", now),
                      "instructions_seen": ("instructions_seen_at", now), "finished": ("finished_at", now)}
            for key, value in values.items():
                name, stored = fields.get(key, (key, value))
                setattr(self.participant, name, stored)
            self.participant.save(update_fields=[fields.get(k, (k,))[0] for k in values])
            return
        previews = self.session.get(PREVIEW_KEY, {})
        previews[self.slug] = {**previews.get(self.slug, {}), **values}
        self.session[PREVIEW_KEY] = previews


def _urls(study, store):
    name = "participant-preview" if store.preview else "participant-flow"
    return {"action": reverse(name, kwargs={"slug": study.slug})}


def _practice_context(study, index):
    """The practice item `index` drawn like a real one (the kind partial, its order)."""
    practice = study.practice_items[index]
    item = Item(study=study, item_id=practice["item_id"], data=practice["data"], gold=practice["gold"])
    order = shown_order_for(study, item, 0, [])
    return practice, Assignment(study=study, item=item, shown_order=order)


def _render_step(request, study, step, store, **extra):
    context = {"study": study, "step": step, "preview": store.preview, **_urls(study, store), **extra}
    state = store.state()
    if step == "consent":
        context["consent_html"] = render_markdown(study.consent)
    elif step == "instructions":
        context["instructions_html"] = render_markdown(study.instructions)
    elif step in ("pre", "post"):
        errors, values = extra.get("errors") or {}, extra.get("values") or {}
        context["questions"] = [dict(q, error=errors.get(q["key"]), value=values.get(q["key"]))
                                for q in (study.pre_questions if step == "pre" else study.post_questions)]
    elif step == "practice" and "feedback" not in extra:
        index = state.get("practice_done", 0)
        _, assignment = _practice_context(study, index)
        context.update(item_context(study, assignment, values=extra.get("values"), errors=extra.get("item_errors")))
        context.update(practice_number=index + 1, practice_total=len(study.practice_items))
    elif step == "items":  # preview only: participants use the task page
        context.update(_preview_item_context(study, state))
    template = {"items": "preview_item", "pre": "questions", "post": "questions"}.get(step, step)
    return render(request, f"participant/{template}.html", context)


def _post_step(request, study, store, step):
    """Handles the form of `step`; then shows whatever comes next (POST-redirect-GET)."""
    post = request.POST
    if post.get("step") != step:  # a stale form (back button, double submit): just show the current step
        return redirect(_urls(study, store)["action"])
    if step == "consent":
        if post.get("consent") == "no":
            store.update(declined=True)
            if not store.preview:
                return render(request, "participant/declined.html", {"study": study})
            return render(request, "participant/declined.html", {"study": study, "preview": True})
        if post.get("consent") == "yes":
            store.update(consented=True)
    elif step == "instructions":
        store.update(instructions_seen=True)
    elif step in ("pre", "post"):
        questions = study.pre_questions if step == "pre" else study.post_questions
        answers, errors = question_answers(questions, post)
        if errors:
            return _render_step(request, study, step, store, errors=errors, values=dict(post.items()))
        store.update(**{f"{step}_answers": answers})
    elif step == "practice":
        return _answer_practice(request, study, store)
    elif step == "items" and store.preview:
        return _preview_answer(request, study, store)
    return redirect(_urls(study, store)["action"])


def _answer_practice(request, study, store):
    """Checks a practice answer (nothing is stored but the step), then reveals the
    expected answer and the feedback; "continue" moves on."""
    index = store.state().get("practice_done", 0)
    if request.POST.get("index") != str(index + 1):  # a repeat of an earlier practice form: show the current one
        return redirect(_urls(study, store)["action"])
    if request.POST.get("continue"):
        store.update(practice_done=index + 1)
        return redirect(_urls(study, store)["action"])
    practice, assignment = _practice_context(study, index)
    answers = {k[len(FIELD_PREFIX):]: v for k, v in request.POST.items() if k.startswith(FIELD_PREFIX)}
    try:  # the form speaks the (unsaved) assignment's tokens, like the task page
        values = checked_answers(assignment, answers, blinded=True)
    except SubmissionError as exc:
        return _render_step(request, study, "practice", store, values=answers, item_errors=exc.errors)
    blinding = blinding_for(assignment)
    context = item_context(study, assignment, values=blinding.values(values))
    reveal = []
    for q in context["questions"]:
        qid = blinding.questions.get(q["id"], q["id"])
        expected = practice["gold"].get(qid)
        if expected is None:
            continue
        expected_token, given_token = blinding.option(str(expected)), blinding.option(values.get(qid))
        label = next((c["label"] for c in q["choices"] if c["value"] == expected_token), str(expected))
        given = next((c["label"] for c in q["choices"] if c["value"] == given_token), values.get(qid))
        reveal.append({"question": q["text"], "expected": label, "given": given,
                       "correct": str(expected) == values.get(qid)})
    return render(request, "participant/practice_feedback.html", {
        "study": study, "preview": store.preview, **_urls(study, store), "reveal": reveal,
        "feedback_html": render_markdown(practice.get("feedback", "")),
        "practice_number": index + 1, "practice_total": len(study.practice_items)})


def _finish(request, study, store):
    """The completion page (the code, and the platform link); the first visit records
    the finish time and, with a completion_url, sends the participant there. It is a
    page that redirects itself (meta refresh), not an HTTP redirect: the page is reached
    from a form POST, and the CSP's form-action 'self' would block a redirect chain that
    leaves the site."""
    target = completion_redirect(study)
    first = not store.state().get("finished")
    if first:
        store.update(finished=True)
    return render(request, "participant/done.html", {"study": study, "target": target, "preview": store.preview,
                                                     "go_now": first and target and not store.preview})


# --- preview -----------------------------------------------------------------------------

def _preview_items(study):
    """The real items a preview walks through: a participant's quota, or all."""
    items = Item.objects.filter(study=study).real().order_by("position", "id")
    return items[:study.max_items_per_participant] if study.max_items_per_participant else items


def _preview_item_context(study, state):
    index = state.get("preview_item", 0)
    item = _preview_items(study)[index]
    assignment = Assignment(study=study, item=item, shown_order=shown_order_for(study, item, 0, []))
    context = item_context(study, assignment)
    context.update(preview_number=index + 1, preview_total=_preview_items(study).count())
    return context


def _preview_answer(request, study, store):
    """A previewed item: answers are checked like real ones but never stored."""
    state = store.state()
    index = state.get("preview_item", 0)
    if request.POST.get("finish"):
        store.update(items_done=True)
        return redirect(_urls(study, store)["action"])
    answers = {k[len(FIELD_PREFIX):]: v for k, v in request.POST.items() if k.startswith(FIELD_PREFIX)}
    context = {"study": study, "step": "items", "preview": True, **_urls(study, store)}
    context.update(_preview_item_context(study, state))
    assignment = context["assignment"]
    try:  # tokens of the unsaved assignment, as drawn
        checked_answers(assignment, answers, blinded=True)
    except SubmissionError as exc:
        context.update(item_context(study, assignment, values=answers, errors=exc.errors))
        return render(request, "participant/preview_item.html", context)
    done = index + 1 >= _preview_items(study).count()
    store.update(preview_item=index + 1, items_done=done)
    return redirect(_urls(study, store)["action"])


@require_http_methods(["GET", "POST"])
def preview(request, slug):
    """The study as a participant sees it, for its researchers and admins: every page and
    the real items, but no Participant, assignment or judgment is written (the progress
    lives in the session). `?restart=1` starts over."""
    if not request.user.is_authenticated or participant_scope(request) is not None:
        raise Http404("No such study.")
    study = Study.objects.filter(slug=slug).first()
    if study is None or not may_read(request.user, study):
        raise Http404("No such study.")
    store = _Store(session=request.session, slug=slug)
    if request.GET.get("restart"):
        request.session[PREVIEW_KEY] = {k: v for k, v in request.session.get(PREVIEW_KEY, {}).items() if k != slug}
        return redirect("participant-preview", slug=slug)
    state = store.state()
    if state.get("declined"):
        return render(request, "participant/declined.html", {"study": study, "preview": True})
    if not _preview_items(study).exists():
        state = {**state, "items_done": True}
    step = next_step(study, state)
    if request.method == "POST":
        return _post_step(request, study, store, step)
    if step == "done":
        return _finish(request, study, store)
    return _render_step(request, study, step, store)

