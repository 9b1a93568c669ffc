"""The per-address limit under real concurrency on PostgreSQL (issue 31, item 6): entries
from one address at the same instant (threads with their own connections, released by one
barrier) let in exactly `per_address`, and an entry from another address still gets in."""
import pytest
from django.test import Client

from annotate.models import EntryAddress, Participant
from tests.factories import make_items, make_study, participant_link
from tests.test_assignment_concurrency import run_together

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("plain_http", "empty_tables_after_module"),
    pytest.mark.postgres("row locks on the address's row under simultaneous entries"),
]


def test_simultaneous_entries_from_one_address_let_in_exactly_per_address():
    study = make_study(overlap=1, instructions="", recruitment={"platform": "prolific", "places": 50})
    make_items(study, 4)

    def entry(pid, address):
        link = participant_link(study, f"?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID=se-{pid}")
        return lambda: Client(REMOTE_ADDR=address).get(link).status_code

    workers = [entry(f"bot{n:02d}", "203.0.113.7") for n in range(24)] + [entry("real", "198.51.100.2")]
    codes = run_together(workers)
    assert sorted(codes[:24]) == [302] * 5 + [429] * 19 and codes[24] == 302
    assert Participant.objects.count() == 6
    assert sorted(EntryAddress.objects.values_list("admitted", "refused")) == [(1, 0), (5, 19)]
