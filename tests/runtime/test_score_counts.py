"""Issue 31 item 5: the score job's counts and the report's n agree.

Why they differed: on items of more than two candidates the report read its metric
coverage per (item, shown pair) unit (report/pair_units.py) while the score job counts
items (annotate.services.metric_coverage: every candidate scored). Three items of three
candidates, every pair judged on i1 and i2, one pair on i3: 7 units. GEMBA (the fake
server as its judge, answering 100, or the bare scale where the response says "nope")
parses i1's a and b only: the job said 0 of 3 items scored, the report 1 of 7 units with a
mean of 100.0. Now the report counts items too: 0 of 3, 3 unparsed.

The per-system n: a metric mean covers the items of the system's human row; candidate c,
scored on 3 items but compared on 2, showed n = 2 beside 3 items with no word why. Its entry
now has `n_scored` 3 (the job's rows) and `n_note`.

The score job runs in a live Celery worker (tests/runtime/test_worker.py's setup)."""

import pytest

from annotate.reports.data import study_report
from annotate.studies.importing import import_batch_bytes
from models_runtime.jobs import prepare_job
from tests.factories import add_judgments, complete_assignments, header, jsonl

from .test_worker import BROKER, groups_back, run_in_worker  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.slow]

TEXTS = {"i1": ("the cat sat", "a cat sat down", "nope cat"),
         "i2": ("nope one", "nope two", "the cat sat on it"),
         "i3": ("nope a", "nope b", "nope c")}


def gemba_answer(prompt):
    return "Score (0-100):" if "Response: nope" in prompt else "100"


def batch():
    lines = [header("counts", "pairwise_alignment", annotations_per_item=3)]
    for item_id, texts in TEXTS.items():
        lines.append({"item_id": item_id, "input": f"Describe {item_id}", "reference": "the cat sat on the mat",
                      "candidates": [{"id": cid, "text": t} for cid, t in zip("abc", texts)]})
    return jsonl(*lines)


@pytest.mark.postgres("the worker subprocess shares the test database; the SQLite one is in memory")
def test_the_score_jobs_counts_and_the_reports_n_agree(fake_llm, groups_back, transactional_db, settings,  # noqa: F811
                                                       tmp_path, monkeypatch):
    import redis

    redis.Redis.from_url(BROKER).ping()
    fake_llm.answer = gemba_answer
    monkeypatch.setenv("HUMEVAL_MODELS", settings.HUMEVAL_MODELS_JSON)
    monkeypatch.setenv("HUMEVAL_GENERATION_CACHE", settings.HUMEVAL_GENERATION_CACHE)
    study = import_batch_bytes(batch()).study
    job, _ = prepare_job("score", {"study": "counts", "metrics": "gemba,rouge1", "model": "fake"})
    job = run_in_worker(job, tmp_path, "the score job")
    assert job.result["coverage"] == {"gemba": {"n_items": 3, "n_scored": 0, "n_unparsed": 3},
                                      "rouge1": {"n_items": 3, "n_scored": 3, "n_unparsed": 0}}
    pairs = {"i1": ["a|b", "a|c", "b|c"], "i2": ["a|b", "a|c", "b|c"], "i3": ["a|b"]}
    rows = [(i, f"u{n}", "choice", shown.split("|")[0], shown, 4.0)
            for i, shown_pairs in pairs.items() for n, shown in enumerate(shown_pairs)]
    add_judgments(study, rows)
    complete_assignments(study, rows)
    report = study_report(study)[0]
    assert report["units"]["n_units"] == 7
    coverage = {m: {k: v for k, v in c.items() if k != "n_nonfinite"} for m, c in report["coverage"].items()}
    assert coverage == job.result["coverage"]
    assert "gemba: 3 of 3 items have unparsed judge answers (0 scored)" in report["warnings"]
    c_rouge = report["systems"]["c"]["metrics"]["rouge1"]
    assert (c_rouge["n"], c_rouge["n_scored"]) == (2, 3)
    assert c_rouge["n_note"] == ("mean over the 2 items where a judgment compared this system (its human row); "
                                 "3 items have a score")
    assert "n_note" not in report["systems"]["a"]["metrics"]["rouge1"]  # a: compared on every item
    assert report["systems"]["a"]["metrics"]["rouge1"]["n"] == report["systems"]["a"]["metrics"]["rouge1"][
        "n_scored"] == 3
