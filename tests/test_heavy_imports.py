"""A web process imports no heavy numerical or model library until a request needs one
(docs/architecture.md, "Heavy imports"): after django.setup(), the URLconf, a few resolved
URLs and the OpenAPI schema, none of them is in sys.modules. Before (issue 25), every
gunicorn worker imported numba, scipy, scikit-learn, NLTK, pandas and matplotlib at start
(through annotate.api.serializers -> evaluation.report.kinds): 377 MB of RSS idle.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from scipy import stats

from evaluation.bootstrap import Z975

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numba", "scipy", "sklearn", "nltk", "pandas", "matplotlib", "torch", "transformers",
         "sentence_transformers", "bert_score", "rouge_score", "sacrebleu", "rank_bm25")
PROBE = """
import json, sys
import django
django.setup()
import humeval.urls  # noqa: F401
from django.urls import resolve
for url in ("/", "/api/jobs/", "/api/pipelines/", "/plans/new/", "/api/studies/x/report/", "/studies/x/report-panel/"):
    resolve(url)
from drf_spectacular.generators import SchemaGenerator
SchemaGenerator().get_schema(request=None, public=True)
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in json.loads(sys.argv[1]))))
"""


def test_web_process_imports_no_heavy_library_until_a_report_is_built():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_z975_is_scipys_normal_quantile():
    """Written out so that importing evaluation.bootstrap imports no scipy."""
    assert float(stats.norm.ppf(0.975)) == Z975
