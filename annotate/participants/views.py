"""Participant pages: `/p/<slug>/<entry_key>/` (the link a recruiting platform opens), the
study flow `/p/<slug>/go/` (consent, instructions, pre questions, practice, then the task
page, post questions and the completion or screen-out page) and
`/p/<slug>/<entry_key>/preview/` (the same pages, templates and order rules for the
study's researchers and admins, writing nothing).

Only a study that recruits (annotate/participants/recruitment.py) answers a link, and only with its
entry key; anything else is the same 404. The session a link signs in is scoped to its
study (annotate/access.py, ParticipantScopeMiddleware), bound to the platform session of
the first visit, and expires after HUMEVAL_PARTICIPANT_SESSION_HOURS.
"""
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import login, logout
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotate.access import SCOPE_KEY, may_read, participant_scope
from annotate.desk.assignment import _gold_drawn, next_for, release_expired
from annotate.desk.blinding import blinding_for
from annotate.desk.ordering import item_order_key, item_order_of, shown_order_for
from annotate.desk.rendering import render_markdown
from annotate.desk.submission import SubmissionError, checked_answers
from annotate.desk.views.task import FIELD_PREFIX, item_context, task_context
from annotate.kinds import get_kind, study_config
from annotate.models import DRAFT, OPEN, RETURNED, SCREENED_OUT, Assignment, Item, Participant
from annotate.participants.comprehension import ATTEMPTS, questions_shown, wrong_answers
from annotate.participants.entry_limits import WINDOW_MINUTES, address_hash, admit
from annotate.participants.flow_store import PREVIEW_KEY, FlowStore
from annotate.participants.participation import (
    BadLink,
    completion_redirect,
    join,
    link_ids,
    next_step,
    participant_step,
    question_answers,
    same_session,
)
from annotate.participants.recruitment import (
    MTURK_PREVIEW,
    PLATFORM_PARAMS,
    RETURN_INSTRUCTIONS,
    browser_hash,
    end,
    recruiting_study,
    screenout_redirect,
)
from annotate.participants.screening import gated, screenout_reason
from evaluation.vocabulary import SKIP_REASONS
from humeval.proxy import client_ip
from humeval.security_headers import content_security_policy

BROWSER_COOKIE = "humeval_entry_{}"  # a `link` participant's browser (signed; per study)
COOKIE_SALT = "humeval.participant.browser"
MTURK_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
NO_SUCH_STUDY = "No such study."


def _origin(url):
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def with_platform_csp(response, study):
    """The flow's pages may send their last form on to the platform (the completion or
    screen-out redirect follows a form's POST, and the CSP's form-action governs redirects
    too); MTurk studies' pages may be framed by the HIT and post to its externalSubmit."""
    origins = {_origin(study.completion_url)} - {None}
    frames = ()
    if _platform(study) == "mturk":
        origins |= set(MTURK_ORIGINS)
        frames = MTURK_ORIGINS
    response["Content-Security-Policy"] = content_security_policy(tuple(sorted(origins)), frames)
    return response


# --- the link ----------------------------------------------------------------------------------

@xframe_options_exempt  # MTurk frames its HIT page; the CSP's frame-ancestors names MTurk only
@require_http_methods(["GET", "POST"])
def entry(request, slug, key):
    """The link a platform opens: create or resume the participant, bound to the platform
    session of the first visit, sign them in for this study only, and start (or resume)
    the flow. Unknown slug, wrong key, no recruitment or a draft: the same 404."""
    study = recruiting_study(slug, key)
    if study is None:
        raise Http404(NO_SUCH_STUDY)
    platform = study.recruitment["platform"]
    context = {"study": study, "platform": platform}
    if platform == "mturk" and request.GET.get("assignmentId") == MTURK_PREVIEW:
        return with_platform_csp(render(request, "participant/mturk_preview.html", context), study)
    try:
        ids = link_ids(request.GET, platform)
    except BadLink as exc:
        if participant_scope(request) == slug and not set(PLATFORM_PARAMS[platform]) & set(request.GET):
            return redirect("participant-flow", slug=slug)  # the bare link, opened again by someone already in
        return render(request, "participant/bad_link.html", {**context, "reason": str(exc)}, status=400)
    if platform == "mturk" and request.headers.get("Sec-Fetch-Dest") == "iframe":
        # Inside the HIT's frame the browser keeps no session cookie (third-party): the study
        # opens in a tab of its own; the frame takes the code back to MTurk.
        submit_to = request.GET.get("turkSubmitTo", "")
        context.update(ids=ids, submit_to=submit_to if submit_to in MTURK_ORIGINS else MTURK_ORIGINS[0],
                       link=request.get_full_path())
        return with_platform_csp(render(request, "participant/mturk_frame.html", context), study)
    if request.user.is_authenticated and participant_scope(request) is None and not request.POST.get("continue"):
        # A signed-in researcher or annotator is never signed out silently.
        return render(request, "participant/signed_in.html", context)
    token = request.get_signed_cookie(BROWSER_COOKIE.format(study.pk), default="", salt=COOKIE_SALT)
    new_token = ""
    existing = Participant.objects.select_related("user").filter(study=study, user__username=ids.username).first()
    if existing is None:
        if study.status != OPEN:
            return with_platform_csp(render(request, "participant/closed.html", context), study)
        address = address_hash(client_ip(request))
        if not admit(study, address, timezone.now()):  # one link holder cannot take every place
            return with_platform_csp(render(request, "participant/too_many.html", {
                **context, "minutes": WINDOW_MINUTES, "return_instructions": RETURN_INSTRUCTIONS[platform]},
                status=429), study)
        if platform == "link":
            new_token = secrets.token_urlsafe(16)
        existing, created = join(study, ids, browser_hash(new_token) if new_token else "", address)
        if not created:
            new_token = ""
    if not same_session(existing, ids, browser_hash(new_token or token) if (new_token or token) else ""):
        return render(request, "participant/already_used.html", context, status=403)
    if request.user != existing.user:
        logout(request)
        login(request, existing.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SCOPE_KEY] = {"study": slug, "user": existing.user.pk}
    request.session.set_expiry(settings.HUMEVAL_PARTICIPANT_SESSION_HOURS * 3600)
    response = redirect("participant-flow", slug=slug)
    if new_token:
        response.set_signed_cookie(BROWSER_COOKIE.format(study.pk), new_token, salt=COOKIE_SALT,
                                   max_age=365 * 24 * 3600, httponly=True, samesite="Lax",
                                   secure=settings.SESSION_COOKIE_SECURE)
    return response


# --- the flow ----------------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
def flow(request, slug):
    """The participant's current step; POST answers the step's form."""
    if participant_scope(request) != slug:
        raise Http404(NO_SUCH_STUDY)
    participant = (Participant.objects.select_related("user", "study")
                   .filter(study__slug=slug, user=request.user).exclude(study__status=DRAFT).first())
    if participant is None:  # removed in the admin since
        raise Http404(NO_SUCH_STUDY)
    study = participant.study
    return with_platform_csp(_flow(request, study, participant), study)


def _flow(request, study, participant):
    store = FlowStore(participant)
    if participant.declined_at or participant.ended == RETURNED:
        return _returned_page(request, study, store)
    step = participant_step(participant)
    if study.status != OPEN and step in ("items", "post", "done", "screenout") and participant.finished_at is None:
        return _closed_page(request, study)  # paused or closed: nothing more now, nothing finished
    if request.method == "POST":
        if request.POST.get("step") == "return" and step not in ("done", "screenout"):
            return _return(request, study, store)
        return _post_step(request, study, store, step)
    if step == "items":
        return redirect("annotate-task", slug=study.slug)
    if step == "done":
        return _finish(request, study, store)
    if step == "screenout":
        return _screen_out(request, study, store)
    return _render_step(request, study, step, store)


def _closed_page(request, study):
    return render(request, "participant/closed.html", {"study": study}, status=200)


def _returned_page(request, study, store):
    return render(request, "participant/declined.html", {
        "study": study, "preview": store.preview, **_urls(study, store),
        "return_instructions": RETURN_INSTRUCTIONS[_platform(study)]})


def _platform(study):
    return (study.recruitment or {}).get("platform", "link")


def _urls(study, store):
    if store.preview:
        return {"action": reverse("participant-preview", kwargs={"slug": study.slug, "key": store.key})}
    return {"action": reverse("participant-flow", kwargs={"slug": study.slug})}


def _practice_assignment(study, index):
    """The practice item `index`, drawn like a real one (the kind's partial) but in the
    batch's own order, so its feedback may say "the first answer"."""
    practice = study.practice_items[index]
    item = Item(study=study, item_id=practice["item_id"], data=practice["data"], gold=practice["gold"])
    order = get_kind(study.kind).shown_order(item.data, study_config(study), False, None, [])
    return practice, Assignment(study=study, item=item, shown_order=order)


def _render_step(request, study, step, store, **extra):
    context = {"study": study, "step": step, "preview": store.preview, **_urls(study, store), **extra}
    if step == "consent":
        context["consent_html"] = render_markdown(study.consent)
    elif step == "instructions":
        context["instructions_html"] = render_markdown(study.instructions)
    elif step in ("pre", "post"):
        errors, values = extra.get("errors") or {}, extra.get("values") or {}
        context["questions"] = [dict(q, error=errors.get(q["key"]), value=values.get(q["key"]))
                                for q in (study.pre_questions if step == "pre" else study.post_questions)]
    elif step == "comprehension":
        context.update(questions=questions_shown(study.comprehension), attempts=ATTEMPTS,
                       attempts_used=store.comprehension_attempts(),
                       instructions_html=render_markdown(study.instructions) if study.instructions else "")
    elif step == "practice":
        index = store.practice_done()
        _, assignment = _practice_assignment(study, index)
        context.update(item_context(study, assignment, values=extra.get("values"), errors=extra.get("item_errors")))
        context.update(practice_number=index + 1, practice_total=len(study.practice_items))
    template = {"pre": "questions", "post": "questions"}.get(step, step)
    return render(request, f"participant/{template}.html", context)


def _post_step(request, study, store, step):
    """Handles the form of `step`; then shows whatever comes next (POST-redirect-GET). A
    participant whose next step is the items gets their first item reserved here (a POST),
    so it is on the very next screen."""
    post = request.POST
    if post.get("step") != step:  # a stale form (back button, double submit): just show the current step
        return redirect(_urls(study, store)["action"])
    if step == "consent":
        if post.get("consent") == "no":
            store.update(declined=True)
            return _returned_page(request, study, store)
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
    elif step == "comprehension":
        if not wrong_answers(study.comprehension, post):
            store.update(comprehension_passed=True)
        else:
            attempts = store.comprehension_attempts() + 1
            store.update(comprehension_attempts=attempts)
            if attempts >= ATTEMPTS:  # Prolific: two attempts, then a screen-out (never a rejection)
                return _screen_out_now(request, study, store)
    elif step == "practice":
        return _answer_practice(request, study, store)
    if not store.preview and step != "items" and store.step(study) == "items":
        next_for(store.participant.user, slug=study.slug)  # the first item, reserved by this POST
    return redirect(_urls(study, store)["action"])


def _answer_practice(request, study, store):
    """Checks a practice answer (nothing is stored but the step), then shows the item
    again with the expected answer, named as the page named it ("Response A"), beside the
    participant's, and the feedback; "continue" moves on."""
    index = store.practice_done()
    if request.POST.get("index") != str(index + 1):  # a repeat of an earlier practice form: show the current one
        return redirect(_urls(study, store)["action"])
    if request.POST.get("continue"):
        store.update(practice_done=index + 1)
        if not store.preview and store.step(study) == "items":
            next_for(store.participant.user, slug=study.slug)
        return redirect(_urls(study, store)["action"])
    practice, assignment = _practice_assignment(study, index)
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
    context.update({"preview": store.preview, **_urls(study, store), "reveal": reveal, "reviewing": True,
                    "feedback_html": render_markdown(practice.get("feedback", "")),
                    "practice_number": index + 1, "practice_total": len(study.practice_items)})
    return render(request, "participant/practice_feedback.html", context)


def _finish(request, study, store):
    """The completion: the first visit records the finish time and, with a
    completion_url, sends the participant there with an HTTP redirect (the flow's CSP
    lets the last form's redirect chain reach the platform). Later visits, and studies
    without a URL, show the code and a link."""
    target = completion_redirect(study)
    first = not (store.state().get("finished") if store.preview else store.participant.finished_at)
    if first and not store.preview and gated(study, store.participant):
        return _screen_out_now(request, study, store)  # quality_gate: flagged, so the screen-out code
    if first:
        store.update(finished=True)
    if first and target and not store.preview:
        return HttpResponseRedirect(target)
    return render(request, "participant/done.html", {"study": study, "target": target, "preview": store.preview,
                                                     "platform": _platform(study)})


def _screen_out(request, study, store):
    """No place or no item left for someone who answered nothing, a comprehension check
    failed twice, or (quality_gate) a flagged participant at the end: the reason with the
    screen-out code (or the platform's return instruction), never the completion code.
    The first visit records it (participants.csv `screened_out`) and gives back a place
    they held."""
    target = screenout_redirect(study)
    if not store.preview and store.participant.ended != SCREENED_OUT:
        end(study, Participant.objects.filter(pk=store.participant.pk), SCREENED_OUT, timezone.now())
        if target:
            return HttpResponseRedirect(target)
    return render(request, "participant/screenout.html", {
        "study": study, "preview": store.preview, "target": target, "reason": screenout_reason(study, store),
        "screenout_code": (study.recruitment or {}).get("screenout_code", ""),
        "return_instructions": RETURN_INSTRUCTIONS[_platform(study)]})


def _screen_out_now(request, study, store):
    """Screens the participant out now (their place goes back) and sends them on: to the
    platform with the screen-out code when the study has a URL, else to the page saying so."""
    if store.preview:
        store.update(screened_out=True)
    elif store.participant.ended != SCREENED_OUT:
        end(study, Participant.objects.filter(pk=store.participant.pk), SCREENED_OUT, timezone.now())
        target = screenout_redirect(study)
        if target:
            return HttpResponseRedirect(target)
    return redirect(_urls(study, store)["action"])


def _return(request, study, store):
    """"Stop taking part": the answers so far are kept, the place and the open item go
    back, no code."""
    if not store.preview:
        now = timezone.now()
        end(study, Participant.objects.filter(pk=store.participant.pk), RETURNED, now)
        Assignment.objects.filter(study=study, annotator=store.participant.user).open(now).update(expires_at=now)
        release_expired(study, now)
    else:
        store.update(declined=True)
    return _returned_page(request, study, store)


# --- preview -------------------------------------------------------------------------------------

def _preview_study(request, slug, key):
    """The study of a preview URL, for those who may read it (else the same 404)."""
    study = recruiting_study(slug, key)
    if study is None or not request.user.is_authenticated or participant_scope(request) is not None:
        raise Http404(NO_SUCH_STUDY)
    if not may_read(request.user, study):
        raise Http404(NO_SUCH_STUDY)
    return study


def _preview_assignment(request, study, state):
    """The item a participant would be given next, drawn by the engine's rules (gold draw,
    fullest first, then a participant's seeded order; the quota), or None; never stored."""
    seen = state.get("seen", [])
    if study.max_items_per_participant and state.get("answered", 0) >= study.max_items_per_participant:
        return None
    seed = state.setdefault("seed", 1)
    order = item_order_key(*item_order_of(seed))
    item = None
    for gold in ((True, False) if _gold_drawn(study, request.user, len(seen)) else (False,)):
        item = (Item.objects.free_in(study.pk, study.annotations_per_item, 0, gold, order)
                .exclude(pk__in=seen).first())
        if item is not None:
            break
    if item is None:
        return None
    return Assignment(study=study, item=item, shown_order=shown_order_for(study, item, 0, []),
                      created_at=timezone.now(),
                      expires_at=timezone.now() + timedelta(minutes=study.assignment_timeout_minutes))


def _preview_task(request, study, store, state, notice=None, values=None, errors=None):
    """The task page (or, for htmx, its item partial) as the participant sees it."""
    assignment = _preview_assignment(request, study, state)
    if assignment is None:
        store.update(items_done=True)
        url = _urls(study, store)["action"]
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    state["current"] = assignment.item_id
    store.update(current=assignment.item_id)
    preview_urls = {"submit_url": _urls(study, store)["action"], "skip_url": _urls(study, store)["action"]}
    context = task_context(study, assignment, lean=True, preview=True, values=values, errors=errors,
                           progress=_preview_progress(study, state), extra=preview_urls)
    context["notice"] = notice
    if request.htmx:
        context["oob"] = True
        return render(request, "annotate/_item.html", context)
    return render(request, "annotate/task.html", context)


def _preview_progress(study, state):
    answered = state.get("answered", 0)
    free = Item.objects.filter(study=study).for_humans().filter(n_assigned__lt=study.annotations_per_item) \
        .exclude(pk__in=state.get("seen", [])).count()
    remaining = free
    if study.max_items_per_participant:
        remaining = max(0, min(remaining, study.max_items_per_participant - answered))
    return {"done": answered, "remaining": remaining, "total": answered + remaining, "assigned": answered}


def _preview_item_answer(request, study, store, state):
    """A previewed item answered or skipped: checked like a real one, never stored."""
    current = state.get("current")
    item = Item.objects.filter(study=study, pk=current).first() if current else None
    if item is None:
        return _preview_task(request, study, store, state)
    assignment = Assignment(study=study, item=item, shown_order=shown_order_for(study, item, 0, []))
    if request.POST.get("reason") is not None:  # the skip form
        if request.POST.get("reason") not in dict(SKIP_REASONS):
            return _preview_task(request, study, store, state, notice="Please pick a reason.")
        store.update(seen=[*state.get("seen", []), item.pk], current=None)
        return _preview_task(request, study, store, store.state(), notice="Skipped (preview: nothing stored).")
    answers = {k[len(FIELD_PREFIX):]: v for k, v in request.POST.items() if k.startswith(FIELD_PREFIX)}
    try:
        checked_answers(assignment, answers, blinded=True)
    except SubmissionError as exc:
        return _preview_task(request, study, store, state, values=answers, errors=exc.errors,
                             notice="Please answer every question before submitting.")
    store.update(seen=[*state.get("seen", []), item.pk], answered=state.get("answered", 0) + 1, current=None)
    return _preview_task(request, study, store, store.state(), notice="Saved (preview: nothing stored).")


@require_http_methods(["GET", "POST"])
def preview(request, slug, key):
    """The study as a participant sees it, for its researchers and admins: the same pages,
    templates and order rules, but no Participant, assignment or judgment is written (the
    progress lives in the session). `?restart=1` starts over; "Skip to the end" jumps past
    the items."""
    study = _preview_study(request, slug, key)
    store = FlowStore(session=request.session, study=study)
    if request.GET.get("restart"):
        request.session[PREVIEW_KEY] = {k: v for k, v in request.session.get(PREVIEW_KEY, {}).items() if k != slug}
        return redirect("participant-preview", slug=slug, key=key)
    state = store.state()
    if state.get("declined"):
        return _returned_page(request, study, store)
    step = next_step(study, state)
    if request.method == "POST":
        if request.POST.get("finish"):
            store.update(items_done=True, answered=max(1, state.get("answered", 0)))
            return redirect(_urls(study, store)["action"])
        if request.POST.get("step") == "return":
            return _return(request, study, store)
        if step == "items":
            return _preview_item_answer(request, study, store, state)
        return _post_step(request, study, store, step)
    if step == "items":
        return _preview_task(request, study, store, state)
    if step == "done":
        return _finish(request, study, store)
    if step == "screenout":
        return _screen_out(request, study, store)
    return _render_step(request, study, step, store)

