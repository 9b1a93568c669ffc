"""Benchmark: ExPerT on the embedded SmolLM2-135M, batched (every prompt of a step in one
backend call) vs one call at a time, measured in the same run on the same items.

Reports LLM calls per item (the ExPerT paper reports 18.6 on average with its judge),
items/s for both modes and the speed-up ratio (target: batching >= 3x). The generation
cache is off so neither mode answers from the other's results. Timings on a shared
machine are noisy: read the ratio, and re-run when the machine is quiet.

    .venv/bin/python bench/expert_bench.py [--items 16] [--device cpu|cuda] [--batch-size 16] [--threads N]
        [--decoding shared-prefix|generate]

Both modes draw the same answers (greedy, and sampled retries seeded per prompt), so they
make the same LLM calls and the ratio compares equal work. `--decoding generate` measures
transformers' own padded `generate` instead of the shared-prefix decoder (the ablation).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import django  # noqa: E402

django.setup()
from django.conf import settings  # noqa: E402

REVIEWS = [
    ("Review the hotel.", "The room was spotless and the staff were kind. Breakfast was cold.",
     "Clean room, friendly staff. Sadly the breakfast was not warm."),
    ("Review the phone.", "Battery lasts two days. The camera is blurry at night.",
     "Great battery life, but night photos look bad."),
    ("Review the film.", "The plot dragged, yet the music was moving.",
     "Slow story. Beautiful soundtrack though!"),
    ("Review the cafe.", "Strong coffee, tiny tables, loud music.",
     "The coffee was excellent but it was too noisy to talk."),
]


def run(records, backend, config):
    from models_runtime.judges.expert import explain

    start = time.perf_counter()
    items = explain(records, backend, config)
    return time.perf_counter() - start, items


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=16, help="backend batch size of the batched mode")
    parser.add_argument("--extract-tokens", type=int, default=96)
    parser.add_argument("--judge-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--decoding", default="shared-prefix", choices=["shared-prefix", "generate"])
    args = parser.parse_args()
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)

    settings.HUMEVAL_GENERATION_CACHE = ""  # measure generation, not the cache
    from models_runtime.backends.registry import get_backend
    from models_runtime.judges.expert import ExpertConfig
    from models_runtime.judges.steps import RetryPolicy

    backend = get_backend("smollm2", device=args.device)
    backend.batch_size = args.batch_size
    backend.decoding = args.decoding
    records = [{"input": q, "output": o, "reference": r}
               for q, o, r in (REVIEWS * (args.items // len(REVIEWS) + 1))[:args.items]]
    # Distinct texts per item so nothing is shared between items.
    records = [dict(r, output=f"{r['output']} (#{i})") for i, r in enumerate(records)]
    policy = RetryPolicy(max_attempts=2)
    batched_cfg = ExpertConfig(extract_tokens=args.extract_tokens, judge_tokens=args.judge_tokens, policy=policy)
    single_cfg = ExpertConfig(extract_tokens=args.extract_tokens, judge_tokens=args.judge_tokens, policy=policy,
                              batched=False)
    shared_cfg = ExpertConfig(extract_tokens=args.extract_tokens, judge_tokens=args.judge_tokens, policy=policy,
                              shared_checks=True)

    run(records[:1], backend, batched_cfg)  # warm-up
    t_batched, batched = run(records, backend, batched_cfg)
    t_single, single = run(records, backend, single_cfg)
    t_shared, shared = run(records, backend, shared_cfg)
    calls_b = sum(i["llm_calls"] for i in batched) / len(records)
    calls_s = sum(i["llm_calls"] for i in single) / len(records)
    result = {
        "items": len(records), "device": args.device, "batch_size": args.batch_size, "decoding": args.decoding,
        "torch_threads": __import__("torch").get_num_threads(),
        "max_new_tokens": {"extract": args.extract_tokens, "judge": args.judge_tokens}, "max_attempts": 2,
        # Official separate, order-reversed content/style checks (default) vs one shared check per pair.
        "llm_calls_per_item": {"batched": calls_b, "one_at_a_time": calls_s,
                               "batched_shared_checks": sum(i["llm_calls"] for i in shared) / len(records),
                               "paper": 18.6},
        "matches_per_item": sum(len(i["matches"]) for i in batched) / len(records),
        "seconds_shared_checks": round(t_shared, 2),
        "seconds": {"batched": round(t_batched, 2), "one_at_a_time": round(t_single, 2)},
        "items_per_s": {"batched": round(len(records) / t_batched, 4),
                        "one_at_a_time": round(len(records) / t_single, 4)},
        # Per-call time removes the effect of the two modes drawing different numbers of calls.
        "seconds_per_call": {"batched": round(t_batched / max(1, calls_b * len(records)), 4),
                             "one_at_a_time": round(t_single / max(1, calls_s * len(records)), 4)},
        "speedup_items_per_s": round(t_single / t_batched, 2),
        "speedup_per_call": round((t_single / max(1, calls_s)) / (t_batched / max(1, calls_b)), 2),
        "target_speedup": 3.0,
        "corpus_score": {"batched": sum(i["score"] for i in batched) / len(records),
                         "one_at_a_time": sum(i["score"] for i in single) / len(records)},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
