"""Crowd integrity of recruited participants (issue 31, items 6 and 7), on PostgreSQL:
one address cannot take every place, a place is only held until the first answer, the
Recruitment panel shows the burst; the flow's order holds on the server, the comprehension
check (two attempts, then the screen-out code), the `quality_gate`, and the paste and
focus-loss counts stored with the judgment."""
import json
import re
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotate.desk.assignment import reclaim_expired
from annotate.models import Assignment, EntryAddress, Judgment, Participant, Study
from annotate.participants.entry_limits import PER_ADDRESS, WINDOW_MINUTES
from annotate.participants.recruitment import HOLD_MINUTES
from annotate.studies.batch_format import parse_header
from tests.factories import api_client, make_items, make_study, participant_link, tokens
from tests.test_recruitment import COMPLETE, SCREEN, answer, csv_rows, current, enter, prolific, recruiting, start

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http"),
              pytest.mark.postgres("row locks and the engine's statements")]
BOT_ADDRESS, REAL_ADDRESS = "203.0.113.7", "198.51.100.2"


def flow_of(study):
    return f"/p/{study.slug}/go/"


# --- item 6: one link holder cannot take every place ---------------------------------------------

def test_sixty_rapid_entries_from_one_address_are_limited_and_a_real_participant_gets_a_place(researcher):
    study = recruiting(places=10, quota=2, n_items=20)
    started = time.monotonic()
    statuses = [Client(REMOTE_ADDR=BOT_ADDRESS).get(participant_link(study, prolific(f"bot{n:02d}"))).status_code
                for n in range(60)]
    seconds = time.monotonic() - started
    assert statuses == [302] * PER_ADDRESS + [429] * (60 - PER_ADDRESS)
    assert Participant.objects.count() == PER_ADDRESS == 5
    refused = Client(REMOTE_ADDR=BOT_ADDRESS).get(participant_link(study, prolific("bot59")))
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "Too many new participants from your network" in page and f"again in {WINDOW_MINUTES} minutes" in page
    assert "Please return your submission on Prolific" in page  # never a dead end
    row = EntryAddress.objects.get()
    assert (row.admitted, row.refused, row.in_window) == (5, 56, 5)
    assert BOT_ADDRESS not in row.address and len(row.address) == 64  # a keyed hash, not the address
    # the admitted bots start items and hold 5 of the 10 places; a real participant still gets one
    bots = [enter(study, f"bot{n:02d}", client=Client(REMOTE_ADDR=BOT_ADDRESS)) for n in range(5)]  # resumed
    for bot in bots:
        assert b"Item 1" in start(bot, study).content
    assert Study.objects.get().places_taken == 5
    real = enter(study, "real1", client=Client(REMOTE_ADDR=REAL_ADDRESS))
    assert b"Item 1" in start(real, study).content
    answer(real, study)
    answer(real, study)
    assert b"DONE42" in real.get(flow_of(study)).content
    assert Study.objects.get().places_taken == 6
    # the Recruitment panel shows the burst: 61 entries, 5 let in, 56 refused
    dash = Client()
    dash.force_login(researcher)
    panel = dash.get(f"/studies/{study.slug}/").content.decode()
    bursts = re.search(r'<table id="bursts">.*?<tbody>(.*?)</tbody>', panel, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", bursts)
    assert cells[0] == f"<code>{row.address[:8]}</code>" and cells[1:4] == ["61", "5", "56"]
    assert 0 <= float(cells[4]) <= seconds + 60 and len(cells) == 5  # one burst; the real address is not one
    assert '<dd id="places-on-hold">5 (a hold lasts 10 min)</dd>' in panel  # the bots never answered
    # a new window lets the address in again
    EntryAddress.objects.update(window_start=timezone.now() - timedelta(minutes=WINDOW_MINUTES))
    assert Client(REMOTE_ADDR=BOT_ADDRESS).get(participant_link(study, prolific("bot60"))).status_code == 302


def test_per_address_is_a_study_setting():
    study = recruiting(places=5)
    study.recruitment = {**study.recruitment, "per_address": 2}
    study.save()
    codes = [Client(REMOTE_ADDR=BOT_ADDRESS).get(participant_link(study, prolific(f"p{n}"))).status_code
             for n in range(3)]
    assert codes == [302, 302, 429]
    head = {"study": {"slug": "s", "kind": "pairwise_alignment",
                      "recruitment": {"platform": "prolific", "per_address": 0}}}
    _, errors = parse_header(head)
    assert len(errors) == 1 and errors[0].startswith("line 1: 'recruitment' must be {") and "per_address" in errors[0]
    head["study"]["recruitment"] = {"platform": "prolific", "quality_gate": True}
    assert parse_header(head)[1] == ["line 1: 'recruitment' with \"quality_gate\": true needs a \"screenout_code\""]
    head["study"]["recruitment"]["screenout_code"] = "SO1"
    assert parse_header(head)[1] == []


def minutes_open(assignment):
    """Minutes from hand-out to expiry, to the second (created_at is stamped a few ms later)."""
    return round((assignment.expires_at - assignment.created_at).total_seconds()) / 60


def test_a_place_is_held_only_until_the_first_answer():
    """Places = 1. A participant who never answers holds the place for `hold_minutes`
    (their first item expires then, not after the study's 30 minutes); then it goes back
    and a later participant takes it. One who answers within the hold keeps the place, and
    their next item has the study's full timeout."""
    study = recruiting(places=1, quota=2, n_items=6, assignment_timeout_minutes=30)
    idle = enter(study, "idle")
    start(idle, study)
    held = current(idle, study)
    assert HOLD_MINUTES == 10 and minutes_open(held) == 10
    waiting = enter(study, "waiting")
    assert start(waiting, study)["HX-Redirect"] == flow_of(study)  # full while held: screened out with the code
    assert SCREEN.encode() in waiting.get(flow_of(study)).content
    assert reclaim_expired(study, held.expires_at - timedelta(seconds=1)) == 0  # still held
    assert reclaim_expired(study, held.expires_at) == 1  # the hold ran out
    assert Study.objects.get().places_taken == 0
    assert Participant.objects.get(external_id="idle").status == "timed_out"
    keeper = enter(study, "keeper")
    start(keeper, study)
    first = current(keeper, study)
    assert minutes_open(first) == 10
    answer(keeper, study)
    second = current(keeper, study)
    assert minutes_open(second) == 30  # answered: the place is taken
    assert reclaim_expired(study, first.created_at + timedelta(minutes=11)) == 0
    assert Study.objects.get().places_taken == 1
    assert Participant.objects.get(external_id="keeper").status == "in_progress"


# --- item 7: the flow's order, the comprehension check, the quality gate, paste counts -------------

COMPREHENSION = [{"key": "ties", "question": "May you answer 'tie'?", "options": ["yes", "no"], "answer": "no"},
                 {"key": "what", "question": "What do you judge?", "options": ["tone", "length"], "answer": "tone"}]


def comprehension_study(**fields):
    return recruiting(quota=1, instructions="Judge the **tone**; never answer tie.", comprehension=COMPREHENSION,
                      **fields)


def test_comprehension_check_gives_two_attempts_then_the_screenout_code():
    study = comprehension_study(completion_url=COMPLETE)
    api = f"/api/studies/{study.slug}/assignments/next/"
    client = enter(study, "p1")
    assert client.get(flow_of(study)).context["step"] == "instructions"  # a screen of its own before the check
    client.post(flow_of(study), {"step": "instructions"})
    page = client.get(flow_of(study))
    assert page.context["step"] == "comprehension" and b"attempt 1 of 2" in page.content
    assert b'value="no"' in page.content and all("answer" not in q for q in page.context["questions"])
    assert client.post(api).status_code == 204  # nothing before the check is passed
    assert client.post(flow_of(study), {"step": "comprehension", "ties": "yes", "what": "tone"}).status_code == 302
    retry = client.get(flow_of(study))
    assert retry.context["step"] == "comprehension" and b"you have one more attempt" in retry.content
    assert b"attempt 2 of 2" in retry.content and b"never answer tie" in retry.content  # the instructions again
    assert client.post(api).status_code == 204
    out = client.post(flow_of(study), {"step": "comprehension", "ties": "no", "what": "length"})
    assert (out.status_code, out["Location"]) == (302, f"{COMPLETE}?cc={SCREEN}")  # on to the platform
    page = client.get(flow_of(study))
    assert b"after two attempts" in page.content and SCREEN.encode() in page.content and b"DONE42" not in page.content
    assert client.post(flow_of(study), {"step": "comprehension", "ties": "no", "what": "tone"}).status_code == 302
    assert client.get(flow_of(study)).context["reason"] == "comprehension"  # a third try changes nothing
    assert client.post(api).status_code == 204 and Assignment.objects.count() == 0
    p = Participant.objects.get()
    assert (p.comprehension_attempts, p.comprehension_passed_at, p.status) == (2, None, "screened_out")
    assert [r["status"] for r in csv_rows(study)] == ["screened_out"]
    # the second attempt right: on to the items, then the completion code
    ok = enter(study, "p2")
    ok.post(flow_of(study), {"step": "instructions"})
    ok.post(flow_of(study), {"step": "comprehension", "ties": "yes", "what": "length"})
    ok.post(flow_of(study), {"step": "comprehension", "ties": "no", "what": "tone"})
    assert ok.get(flow_of(study))["Location"] == f"/annotate/{study.slug}/"
    answer(ok, study)
    assert ok.get(flow_of(study))["Location"] == f"{COMPLETE}?cc=DONE42"
    assert Participant.objects.get(external_id="p2").comprehension_attempts == 1


def test_comprehension_header_is_checked():
    base = {"slug": "s", "kind": "pairwise_alignment"}
    _, errors = parse_header({"study": {**base, "comprehension": COMPREHENSION}})
    assert errors == []
    bad = [dict(COMPREHENSION[0], answer="maybe")]
    _, errors = parse_header({"study": {**base, "comprehension": bad}})
    assert errors == ["line 1: 'comprehension' question 1: 'answer' must be one of its options"]
    _, errors = parse_header({"study": {**base, "comprehension": []}})
    assert errors == ["line 1: 'comprehension' must be a non-empty list of {key, question, options, answer}"]


def bot_answers(client, study, n):
    """Answers n items at once while claiming 30 s each (stored: the time since hand-out)."""
    for _ in range(n):
        answer(client, study, seconds=30)


def honest_answers(client, study, n):
    for _ in range(n):
        a = current(client, study)
        Assignment.objects.filter(pk=a.pk).update(created_at=timezone.now() - timedelta(seconds=40))
        answer(client, study, seconds=30)


@pytest.mark.parametrize("gate", [True, False])
def test_quality_gate_screens_out_flagged_participants_only_when_on(gate):
    study = recruiting(quota=2, n_items=6, overlap=3, quality={"min_median_seconds": 10})
    study.recruitment = {**study.recruitment, "quality_gate": gate}
    study.save()
    bot, honest = enter(study, "bot"), enter(study, "honest")
    start(bot, study)
    bot_answers(bot, study, 2)
    assert max(Judgment.objects.filter(annotator__username="prolific:bot").values_list("seconds", flat=True)) < 10
    end = bot.get(flow_of(study))
    if gate:  # no completion URL: the flow page says why, with the screen-out code
        assert (end.status_code, end["Location"]) == (302, flow_of(study))
        page = bot.get(flow_of(study)).content.decode()
        assert "did not pass this study's quality checks" in page and SCREEN in page and "DONE42" not in page
    else:
        assert end.status_code == 200 and b"DONE42" in end.content and SCREEN.encode() not in end.content
    start(honest, study)
    honest_answers(honest, study, 2)
    page = honest.get(flow_of(study))
    assert page.status_code == 200 and b"DONE42" in page.content  # not flagged: the completion code either way
    rows = {r["participant"]: (r["status"], r["flagged"], r["items"]) for r in csv_rows(study)}
    assert rows == {"bot": ("screened_out" if gate else "completed", "true", "2"),
                    "honest": ("completed", "false", "2")}


def test_quality_gate_redirects_to_the_platform_with_the_screenout_code():
    study = recruiting(quota=1, n_items=3, quality={"min_median_seconds": 10}, completion_url=COMPLETE)
    study.recruitment = {**study.recruitment, "quality_gate": True}
    study.save()
    bot = enter(study, "bot")
    start(bot, study)
    bot_answers(bot, study, 1)
    end = bot.get(flow_of(study))
    assert (end.status_code, end["Location"]) == (302, f"{COMPLETE}?cc={SCREEN}")
    assert Participant.objects.get().status == "screened_out"


def test_paste_and_focus_loss_counts_are_stored_with_the_judgment(annotators):
    study = make_study(overlap=1)
    make_items(study, 3)
    page = Client()
    page.force_login(annotators[0])
    page.post(f"/annotate/{study.slug}/next/", HTTP_HX_REQUEST="true")
    a = Assignment.objects.get(annotator=annotators[0])
    page.post(f"/annotate/{study.slug}/items/{a.pk}/submit/",
              {"q:choice": tokens(a.pk, {"choice": "m1"})["choice"], "seconds": 5, "comment": "pasted text",
               "pastes": "2", "focus_losses": "1"}, HTTP_HX_REQUEST="true")
    assert list(Judgment.objects.filter(assignment=a).values_list("pastes", "focus_losses")) == [(2, 1)]
    # the API takes them too; absent means not reported (None), never 0
    client = api_client(annotators[1])
    b = client.post(f"/api/studies/{study.slug}/assignments/next/").json()["assignment"]
    bad = client.post(f"/api/assignments/{b}/judgments/", {**tokens(b, {"choice": "m1"}), "pastes": -1}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"] == {"pastes": "must be a whole number from 0 to 10000"}
    assert client.post(f"/api/assignments/{b}/judgments/", tokens(b, {"choice": "m1"}),
                       format="json").status_code == 201
    assert list(Judgment.objects.filter(assignment=b).values_list("pastes", "focus_losses")) == [(None, None)]
    assert Assignment.objects.get(pk=b).completed_at is not None
    # participants.csv totals them per participant (staff-made annotators have no row there)
    from annotate.participants.participation import free_text_counts
    assert free_text_counts(study) == {annotators[0].pk: (2, 1)}


def test_participants_csv_totals_pastes_over_items():
    study = recruiting(quota=3, n_items=4)
    client = enter(study, "paster")
    start(client, study)
    for pastes, losses in ((2, 0), (None, None), (1, 3)):
        a = current(client, study)
        client.post(f"/annotate/{study.slug}/items/{a.pk}/submit/",
                    {"q:choice": tokens(a.pk, {"choice": "m1"})["choice"], "seconds": 5, "comment": "c",
                     "pastes": "" if pastes is None else pastes, "focus_losses": "" if losses is None else losses},
                    HTTP_HX_REQUEST="true")
    [row] = csv_rows(study)
    assert (row["items"], row["pastes"], row["focus_losses"], row["status"]) == ("3", "3", "3", "in_progress")


def test_the_preview_walks_the_comprehension_check_and_writes_nothing(researcher):
    study = comprehension_study()
    client = Client()
    client.force_login(researcher)
    url = f"/p/{study.slug}/{study.entry_key}/preview/"
    client.post(url, {"step": "instructions"})
    assert client.get(url).context["step"] == "comprehension"
    client.post(url, {"step": "comprehension", "ties": "yes", "what": "tone"})
    assert b"you have one more attempt" in client.get(url).content
    assert client.post(url, {"step": "comprehension", "ties": "yes", "what": "tone"})["Location"] == url
    page = client.get(url)
    assert page.context["reason"] == "comprehension" and SCREEN.encode() in page.content
    assert (Participant.objects.count(), Assignment.objects.count()) == (0, 0)
    client.get(url + "?restart=1")
    client.post(url, {"step": "instructions"})
    client.post(url, {"step": "comprehension", "ties": "no", "what": "tone"})
    assert "annotate/task.html" in [t.name for t in client.get(url).templates]  # on to the items


def test_extending_a_held_item_adds_only_the_hold():
    study = recruiting(places=2, quota=2, n_items=4, assignment_timeout_minutes=30)
    client = enter(study, "p")
    start(client, study)
    held = current(client, study)
    before = timezone.now()
    assert client.post(f"/api/assignments/{held.pk}/extend/").status_code == 200
    held.refresh_from_db()
    assert timedelta(minutes=10) <= held.expires_at - before <= timedelta(minutes=10, seconds=5)
    answer(client, study)
    second = current(client, study)
    before = timezone.now()
    assert client.post(f"/api/assignments/{second.pk}/extend/").status_code == 200
    second.refresh_from_db()
    assert timedelta(minutes=30) <= second.expires_at - before <= timedelta(minutes=30, seconds=5)


def test_the_admin_checks_comprehension():
    from annotate.admin import StudyForm

    study = make_study(slug="admin-made")
    base = {f: getattr(study, f) for f in ("slug", "kind", "title", "instructions", "annotations_per_item",
                                           "gold_rate", "assignment_timeout_minutes", "status")}
    data = {**base, "config": "{}", "practice_items": "[]", "pre_questions": "[]", "post_questions": "[]",
            "quality": "{}"}
    bad = StudyForm(data={**data, "comprehension": json.dumps([dict(COMPREHENSION[0], answer="maybe")])},
                    instance=study)
    assert not bad.is_valid()
    assert bad.errors["comprehension"] == ["'comprehension' question 1: 'answer' must be one of its options"]
    good = StudyForm(data={**data, "comprehension": json.dumps(COMPREHENSION)}, instance=study)
    assert good.is_valid(), good.errors
    assert StudyForm(data=data, instance=study).is_valid()
