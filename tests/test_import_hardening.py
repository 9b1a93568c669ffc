"""Import doors under hostile or broken input (issue 14, items 15 and 18): accounts Django
would refuse, and error messages that tell the truth (total count, column, wording).
Each test sends the input, then checks the answer and that no row changed."""
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotate.models import Assignment, AuditLog, Item, Judgment, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from tests.factories import header, jsonl, make_user, pairwise, similarity

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


def counts():
    return (get_user_model().objects.count(), Study.objects.count(), Item.objects.count(),
            Judgment.objects.count(), Assignment.objects.count(), AuditLog.objects.count())


def judgment_rows(*annotators):
    return "\n".join(json.dumps({"study": "names", "item_id": "a", "annotator": name, "question": "choice",
                                 "value": "m1", "shown_order": "", "seconds": None, "submitted_at": None})
                     for name in annotators).encode()


# --- item 15: import_judgments creates only accounts Django would create ---------------------

@pytest.mark.parametrize("name,reason", [
    ("alice\u200b", "annotator 'alice\\u200b' is not a valid username: letters, digits and @ . + - _ only"),
    ("\u200dbob", "annotator '\\u200dbob' is not a valid username: letters, digits and @ . + - _ only"),
    ("eve\ufeff", "annotator 'eve\\ufeff' is not a valid username: letters, digits and @ . + - _ only"),
    ("mallory smith", "annotator 'mallory smith' is not a valid username: letters, digits and @ . + - _ only"),
    ("\uff41lice", "annotator 'ａlice' is not in Unicode normal form (NFKC: 'alice'); "
                   "Django stores usernames normalized"),
])
def test_import_judgments_refuses_usernames_django_would_refuse(name, reason):
    """Before: `alice\\u200b` became a second account that looks exactly like `alice`."""
    make_user("alice", "annotators")
    import_batch_bytes(jsonl(header("names", "pairwise_alignment"), pairwise("a")))
    before = counts()
    with pytest.raises(BatchInvalid) as refused:
        import_judgments(io.BytesIO(judgment_rows("alice", name)))
    assert refused.value.errors == [f"line 2: {reason}"]
    assert counts() == before


def test_import_judgments_still_creates_valid_new_annotators_and_matches_existing_ones():
    make_user("alice", "annotators")
    import_batch_bytes(jsonl(header("names", "pairwise_alignment"), pairwise("a")))
    result = import_judgments(io.BytesIO(judgment_rows("alice", "bob_2", "zoë@lab+1")))
    assert result["created"] == 3 and result["annotators_created"] == 2
    assert sorted(get_user_model().objects.values_list("username", flat=True)) == ["alice", "bob_2", "zoë@lab+1"]


# --- item 18: the number of errors ------------------------------------------------------------

def many_bad_items(n):
    """A batch whose n items each lack 'candidates': exactly one error per line."""
    return jsonl(header("many", "pairwise_alignment"),
                 *[{"item_id": f"i{k}", "input": "x", "reference": "y"} for k in range(n)])


def test_an_upload_with_16856_errors_says_16856(django_user_model):
    """Before: the page said "(1001 errors)": the 1,000 listed plus the '... and N more' line."""
    admin = make_user("adm-many", "admins")
    client = Client()
    client.force_login(admin)
    before = counts()
    upload = SimpleUploadedFile("many.jsonl", many_bad_items(16856), content_type="application/x-ndjson")
    response = client.post("/batches/upload/", {"batch": upload})
    assert response.status_code == 400
    body = response.content.decode()
    assert "The file was refused and nothing was written (16856 errors; the first 1000 are listed):" in body
    assert "<li>line 2: missing key &#x27;candidates&#x27;</li>" in body
    assert "<li>... and 15856 more</li>" in body
    assert counts() == before


def test_the_command_counts_every_error_too(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_bytes(many_bad_items(1005))
    with pytest.raises(CommandError) as refused:
        call_command("import_batch", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert str(refused.value) == f"1005 error(s) in {path}; nothing was written"


# --- item 18: JSON error positions and wording --------------------------------------------------

def batch_errors(*lines):
    data = ("\n".join(lines) + "\n").encode()
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(data)
    return refused.value.errors


def test_an_error_at_the_end_of_a_line_names_the_column_after_it():
    """Before: the parser saw the line break and reported 'column 1' (of the next line)."""
    head = json.dumps(header("cols", "pairwise_alignment"))
    line = '{"item_id": "b", '
    assert len(line) == 17
    assert batch_errors(head, line) == [
        "line 2: bad JSON: Expecting property name enclosed in double quotes at column 18"]


def test_an_unterminated_string_does_not_read_at_at():
    head = json.dumps(header("cols", "pairwise_alignment"))
    assert batch_errors(head, '{"item_id": "abc') == ["line 2: bad JSON: Unterminated string starting at column 13"]


def test_judgments_jsonl_errors_use_the_same_wording():
    before = counts()
    with pytest.raises(BatchInvalid) as refused:
        import_judgments(io.BytesIO(b'{"study": "x", \n{"study": "unterminated\n' + b"[" * 50000 + b"\n"))
    assert refused.value.errors == [
        "line 1: bad JSON: Expecting property name enclosed in double quotes at column 16",
        "line 2: bad JSON: Unterminated string starting at column 11",
        "line 3: bad JSON: nested too deeply",
    ]
    assert counts() == before


def test_predictions_jsonl_nested_50000_deep_is_a_400_not_a_500(django_user_model):
    admin = make_user("adm-pred", "admins")
    import_batch_bytes(jsonl(header("pred", "pairwise_alignment"), pairwise("a")))
    client = Client()
    client.force_login(admin)
    before = counts()
    response = client.post("/api/studies/pred/predictions/", data=b'{"study": ' + b"[" * 50000 + b"\n",
                           content_type="application/x-ndjson")
    assert response.status_code == 400
    assert response.json() == {"errors": ["line 1: bad JSON: nested too deeply"]}
    assert counts() == before


# --- item 18: a scale mismatch names both scales ----------------------------------------------

def test_scale_mismatch_names_the_default_scale_not_none():
    """Before: "'scale' differs from the existing study's None" for a study created
    without a scale (it uses the default 1..6)."""
    import_batch_bytes(jsonl(header("sim", "similarity_survey"), similarity("a")))
    before = counts()
    assert batch_errors(json.dumps(header("sim", "similarity_survey", scale=[1, 4]))) == [
        "line 1: 'scale' [1, 4] differs from the existing study's [1, 6]"]
    assert counts() == before
    # The default written out is not a contradiction.
    result = import_batch_bytes(jsonl(header("sim", "similarity_survey", scale=[1, 6]), similarity("b")))
    assert result.created == 1
