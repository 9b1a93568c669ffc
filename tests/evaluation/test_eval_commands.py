"""The agreement, paradoxes and egises management commands (one JSON document each)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.personalization.paradoxes import STYLES

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    from io import StringIO
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_agreement_command_on_krippendorff_2011(tmp_path):
    rows = {"A": "1 2 3 3 2 1 4 1 2 . . .", "B": "1 2 3 3 2 2 4 1 2 5 . 3",
            "C": ". 3 3 3 2 3 4 2 2 5 1 .", "D": "1 2 3 3 2 4 4 1 2 5 1 ."}
    lines = ["unit,coder,value"]
    for coder, row in rows.items():
        lines += [f"u{i},{coder},{'' if x == '.' else x}" for i, x in enumerate(row.split(), 1)]
    path = tmp_path / "k.csv"
    path.write_text("\n".join(lines) + "\n")
    result = run("agreement", str(path), "--level", "interval")
    assert round(result["krippendorff_alpha"], 3) == 0.849
    assert (result["n_units"], result["n_coders"], result["n_values"]) == (11, 4, 40)
    assert set(result) == {"krippendorff_alpha", "fleiss_kappa", "fleiss_n_units", "percent_agreement",
                           "n_units", "n_coders", "n_values"}
    nominal = run("agreement", str(path), "--level", "nominal")
    assert round(nominal["krippendorff_alpha"], 3) == 0.743
    # Generalised Fleiss over the 11 units with >= 2 ratings: irrCAC's published 0.7612.
    assert round(nominal["fleiss_kappa"], 4) == 0.7612 and nominal["fleiss_n_units"] == 11


def test_agreement_command_compares_numbers_and_drops_missing(tmp_path):
    """Issue 13, item 9. At a numeric level "1.0", "1" and " 1" are one rating; "nan", "NA",
    "null" and "" are missing at every level. Units u1 (1, 1.0), u2 (2, 2), u3 (1, 2),
    u4 (2, nan -> one value, not pairable). Fleiss (units with 2 ratings): pi_1 = (1 + 0
    + 1/2 + 0)/4 = 3/8, pi_2 = 5/8 (u4 counts with its one rating), P_e = 34/64; P_a = (1 +
    1 + 0)/3 = 2/3 -> (2/3 - 17/32)/(15/32) = 13/45. Compared as text, "1.0" != "1" and
    u1 would disagree."""
    path = tmp_path / "n.csv"
    path.write_text("unit,coder,value\nu1,a,1\nu1,b,1.0\nu2,a,2\nu2,b, 2\nu3,a,1\nu3,b,2\nu4,a,2\nu4,b,nan\n"
                    "u5,a,NA\nu5,b,null\n")
    result = run("agreement", str(path), "--level", "interval")
    assert result["fleiss_kappa"] == pytest.approx(13 / 45) and result["fleiss_n_units"] == 3
    assert result["percent_agreement"] == pytest.approx(2 / 3)
    assert (result["n_units"], result["n_values"]) == (3, 6)
    nominal = run("agreement", str(path), "--level", "nominal")
    assert nominal["percent_agreement"] == pytest.approx(1 / 3)  # as labels "1" and "1.0" differ


def test_agreement_command_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("unit,rater,value\n1,a,1\n")
    with pytest.raises(CommandError, match="header must be unit,coder,value"):
        run("agreement", str(path), "--level", "nominal")
    path.write_text("unit,coder,value\n1,a,x\n1,b,y\n")
    with pytest.raises(CommandError, match="line 2: value 'x' is not a number; line 3: value 'y' is not a number"):
        run("agreement", str(path), "--level", "interval")
    path.write_text("unit,coder,value\n1,a,x\n1,a,y\n")
    with pytest.raises(CommandError, match="more than one value"):
        run("agreement", str(path), "--level", "nominal")
    path.write_text("unit,coder,value\n1,a,x\n1,b,x\n")
    assert run("agreement", str(path), "--level", "nominal")["krippendorff_alpha"] is None


def test_paradoxes_command(tmp_path):
    path = tmp_path / "egises.csv"
    path.write_text("model," + ",".join(STYLES) + "\n"
                    "m1,0.5,0.55,0.45,0.4,0.4,\n"
                    "m2,0.5,0.4,0.4,0.6,0.7,0.8\n")
    result = run("paradoxes", str(path))
    assert result["m1"]["probes"]["PX-1"] is True and result["m1"]["probes"]["PX-5"] is None
    assert result["m2"]["summary"] == {"PX-1": False, "PX-2": False, "PX-3": True,
                                       "PX-4": True, "PX-5": True, "PX-6": True}
    # Issue 13, item 15: a nan cell is a missing score (null probes), never false.
    path.write_text("model," + ",".join(STYLES) + "\nm3,nan,0.4,NA,0.6,0.7,0.8\n")  # nan and NA: missing
    m3 = run("paradoxes", str(path))["m3"]
    assert m3["probes"]["PX-1"] is None and m3["probes"]["PX-1-h"] is None and m3["probes"]["PX-2"] is None
    assert m3["probes"]["PX-1-c"] is True and m3["summary"]["PX-2"] is None
    path.write_text("model," + ",".join(STYLES) + "\nm1,0.5,abc,,,,\n")
    with pytest.raises(CommandError, match="line 2: 2-shot w/o hist: not a number"):
        run("paradoxes", str(path))


def test_egises_command_subprocess(tmp_path):
    """Through manage.py: exactly one JSON document on stdout, exit 0; bad file exit 1."""
    path = tmp_path / "docs.jsonl"
    doc = {"doc_id": "d1", "text": "banana cherry date", "title": "Apple",
           "references": {"u1": "apple banana", "u2": "cherry date"},
           "summaries": {"u1": "apple banana", "u2": "apple cherry"}}
    path.write_text(json.dumps(doc) + "\n\n")
    proc = subprocess.run([sys.executable, "manage.py", "egises", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["egises"] == pytest.approx(1 - 0.50001 / 1.00001, abs=1e-12)
    assert result["n_documents"] == 1 and "lemmatize_wordnet_noun" in result["preprocessing"]
    path.write_text("{not json\n")
    proc = subprocess.run([sys.executable, "manage.py", "egises", str(path), "--variant", "paper"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "line 1: invalid JSON" in proc.stderr
    assert proc.stdout == ""


def test_evaluation_never_imports_django():
    """Import every module of ours in a fresh interpreter: Django must stay unloaded."""
    import pkgutil

    import evaluation

    modules = [info.name for info in pkgutil.walk_packages(evaluation.__path__, "evaluation.")]
    assert {"evaluation.report.html", "evaluation.report.kinds.pairwise_alignment"} <= set(modules)
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "print(any(name.split('.')[0] == 'django' for name in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_agreement_command_at_extreme_scales(tmp_path, scale):
    """Issue 24: at 1e-300 the squared differences underflowed to 0 and the interval level
    raised ZeroDivisionError. Interval alpha is unchanged by rescaling the values, so the
    same units at any scale give the package's value for 1, 2, 3."""
    import krippendorff

    rows = [("u1", "a", 1), ("u1", "b", 2), ("u2", "a", 1), ("u2", "b", 1), ("u3", "a", 2), ("u3", "b", 3)]
    path = tmp_path / "tiny.csv"
    path.write_text("unit,coder,value\n" + "".join(f"{u},{c},{v * scale!r}\n" for u, c, v in rows))
    expected = krippendorff.alpha(reliability_data=[[1, 1, 2], [2, 1, 3]], level_of_measurement="interval")
    for level in ("interval", "ordinal", "ratio"):
        result = run("agreement", str(path), "--level", level)
        assert result["krippendorff_alpha"] is not None
    assert run("agreement", str(path), "--level", "interval")["krippendorff_alpha"] == pytest.approx(expected)
