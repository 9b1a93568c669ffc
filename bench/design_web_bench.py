"""Speed of a design run started from the web (issue 34: POST /api/designs/, the Plan
page): one process (a web run forks nothing from a threaded server), so it takes about
`workers` times the command's time. Measured: the design_bench design (100 items x 3
annotators x 4 systems, rank separation) fixed-n and with a stopping rule (a look every 60
judgments: 5 looks, simulated under the null and the design), and a scalar-rating design
(100 inputs x 2 systems x 3 ratings, scalar_difference).

    DJANGO_SETTINGS_MODULE=humeval.test_settings .venv/bin/python bench/design_web_bench.py [--simulations 1000]
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.test_settings")

import django  # noqa: E402

django.setup()

from annotate.planning.design_spec import parse_design  # noqa: E402
from annotate.planning.run import run_design  # noqa: E402
from bench.design_bench import DESIGN  # noqa: E402
from evaluation.report.kinds import SCALAR_RATING  # noqa: E402

SCALAR = {"kind": SCALAR_RATING, "systems": {"a": 5.3, "b": 5.0}, "scale": [0, 10], "items": 100,
          "annotations_per_item": 3, "annotators": 6, "noise_sd": 1.5, "item_sd": 0.5, "annotator_sd": 0.5,
          "targets": [{"test": "scalar_difference", "a": "a", "b": "b"}]}


def timed(raw: dict) -> tuple[float, dict]:
    began = time.perf_counter()
    result = run_design(parse_design(raw), workers=1)
    return time.perf_counter() - began, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulations", type=int, default=1000)
    n = parser.parse_args().simulations
    seconds, result = timed({**DESIGN, "simulations": n})
    t = result["targets"][0]
    print(f"pairwise fixed n, {n} studies, 1 process: {seconds:.1f} s; power {t['power']:.3f} (se {t['se']:.3f})")
    seconds, result = timed({**DESIGN, "simulations": n, "stopping": {"every": 60}})
    s = result["stopping"]
    print(f"pairwise + stopping every 60 (5 looks), {n} studies x 3: {seconds:.1f} s; type-I error "
          f"{s['type1_error_stopping']:.3f} vs {s['type1_error_fixed']:.3f} fixed; power {s['power_stopping']:.3f} vs "
          f"{s['power_fixed']:.3f}; mean judgments {s['mean_judgments_design']:.0f} of {s['judgments_fixed']:.0f}")
    seconds, result = timed({**SCALAR, "simulations": n})
    t = result["targets"][0]
    print(f"scalar, {n} studies, 1 process: {seconds:.1f} s; power {t['power']:.3f} (se {t['se']:.3f}), median "
          f"width {t['median_width']:.3f}")


if __name__ == "__main__":
    main()
