"""Benchmark: Krippendorff's alpha of evaluation.agreement vs the krippendorff package and
NLTK's AnnotationTask, measured in the same run (timings are best-of-N wall clock; the
machine may be shared, so read the ratios rather than the seconds).

    .venv/bin/python bench/agreement_bench.py [--quick] [--no-nltk]
"""
import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evaluation.agreement import krippendorff_alpha  # noqa: E402


def best_of(fn, repeats):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def make_data(coders, units, n_values, missing=0.1, seed=0, noise=0.3):
    """Reliability matrix (coders x units, NaN = missing) and its long format."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_values, units)
    flip = rng.random((coders, units)) < noise
    data = np.where(flip, rng.integers(0, n_values, (coders, units)), truth[None, :]).astype(float)
    data[rng.random((coders, units)) < missing] = np.nan
    coder_idx, unit_idx = np.nonzero(~np.isnan(data))
    return data, (unit_idx, coder_idx, data[coder_idx, unit_idx].astype(np.int64))


def nominal_case(coders, units, repeats, with_nltk):
    import krippendorff

    data, (u, c, v) = make_data(coders, units, 4)
    ours_s, ours = best_of(lambda: krippendorff_alpha(u, c, v, "nominal"), repeats)
    pkg_s, pkg = best_of(lambda: krippendorff.alpha(data, level_of_measurement="nominal"), repeats)
    assert abs(ours.value - pkg) < 1e-9, (ours.value, pkg)
    row = {"case": f"nominal {coders} x {units:,}", "judgments": len(u), "ours_s": ours_s,
           "krippendorff_pkg_s": pkg_s, "ours_over_pkg": ours_s / pkg_s, "alpha": ours.value}
    if with_nltk:
        from nltk.metrics.agreement import AnnotationTask

        triples = [(str(a), str(b), int(x)) for a, b, x in zip(c, u, v)]
        start = time.perf_counter()
        nltk_alpha = AnnotationTask(data=triples).alpha()
        row["nltk_s"] = time.perf_counter() - start
        row["nltk_over_ours"] = row["nltk_s"] / ours_s
        row["nltk_alpha"] = nltk_alpha
    return row


PKG_CHILD = """
import resource, sys, time, numpy as np, krippendorff
resource.setrlimit(resource.RLIMIT_AS, (__LIMIT__, __LIMIT__))
data = np.load(sys.argv[1])
start = time.perf_counter()
try:
    a = krippendorff.alpha(data, level_of_measurement="interval")
    print("ok", time.perf_counter() - start, a, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
except MemoryError as exc:
    print("MemoryError", str(exc).replace(chr(10), " "))
"""


def interval_case(repeats, tmpdir):
    """5 x 20,000 with 1,000 distinct values: time and tracemalloc peak; the package is run
    in a child process with its address space capped at 4 GiB."""
    data, (u, c, v) = make_data(5, 20_000, 1000, noise=0.5)
    values = v / 10.0
    ours_s, ours = best_of(lambda: krippendorff_alpha(u, c, values, "interval"), repeats)
    tracemalloc.start()
    krippendorff_alpha(u, c, values, "interval")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    path = Path(tmpdir) / "interval.npy"
    np.save(path, data / 10.0)
    child = PKG_CHILD.replace("__LIMIT__", str(4 * 2**30))
    proc = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True,
                          text=True, timeout=600)
    other_levels = {f"ours_{level}_s": best_of(
        lambda level=level: krippendorff_alpha(u, c, values, level), repeats)[0]
        for level in ("ordinal", "ratio")}
    return {"case": "interval 5 x 20,000, 1,000 distinct values", "judgments": len(u),
            **other_levels,
            "distinct_values": int(len(np.unique(values))), "ours_s": ours_s,
            "ours_peak_mb": peak / 2**20, "alpha": ours.value,
            "krippendorff_pkg": (proc.stdout.strip() or proc.stderr.strip()[-300:])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one repeat each")
    parser.add_argument("--no-nltk", action="store_true", help="skip the slow NLTK reference")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    import tempfile
    rows = [nominal_case(5, 20_000, repeats, not args.no_nltk),
            nominal_case(3, 200_000, repeats, not args.no_nltk)]
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(interval_case(repeats, tmp))
    print(json.dumps(rows, indent=1))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"this process peak RSS {rss:.0f} MB (includes the imports and the test data)")


if __name__ == "__main__":
    main()
