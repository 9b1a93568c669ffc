"""Tokens per second of the embedded SmolLM2-135M (transformers backend, greedy) with batch
sizes 1, 4 and 16, and the speed-up of batching against batch size 1 measured in the same
run. The cache is off; every batch size generates the same prompts.

    .venv/bin/python bench/generate_bench.py [--device cpu] [--max-new-tokens 24] [--prompts 16]

Prints one JSON document. Timings on a shared machine are noisy: compare ratios, and only
between runs on the same machine.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOPICS = ["a rainy Monday", "learning to cook", "a city bike lane", "an old library", "a football final",
          "a mountain hike", "a new phone", "a jazz concert", "a school garden", "a lost cat", "a space launch",
          "a night train", "a farmers market", "a chess club", "a winter storm", "a museum opening"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--batch-sizes", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=2,
                        help="batch sizes are measured in interleaved rounds (1, 4, 16, 1, 4, 16, ...) so that "
                             "load changes on a shared machine hit all of them; the median is reported")
    args = parser.parse_args()

    import django

    django.setup()
    import torch

    from models_runtime.backends.base import SamplingParams
    from models_runtime.backends.config import embedded_llm_spec
    from models_runtime.backends.transformers_backend import TransformersBackend

    started = time.perf_counter()
    backend = TransformersBackend("smollm2", embedded_llm_spec(), device=args.device, cache=None)
    load_seconds = time.perf_counter() - started
    prompts = [f"Write one sentence about {TOPICS[i % len(TOPICS)]} (#{i})." for i in range(args.prompts)]
    params = SamplingParams(max_new_tokens=args.max_new_tokens)
    backend.batch_size = 1
    backend.generate(prompts[:1], SamplingParams(max_new_tokens=4))  # warm-up
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    measured = {size: [] for size in sizes}
    tokens = {}
    for _ in range(args.rounds):
        for size in sizes:
            backend.batch_size = size
            t0 = time.perf_counter()
            out = backend.generate(prompts, params)
            seconds = time.perf_counter() - t0
            tokens[size] = sum(g.tokens_out for gens in out for g in gens)
            measured[size].append(tokens[size] / seconds)
    runs = [{"batch_size": size, "tokens_out": tokens[size],
             "tokens_per_second_each_round": [round(v, 2) for v in measured[size]],
             "tokens_per_second": round(statistics.median(measured[size]), 2)} for size in sizes]
    reference = runs[0]["tokens_per_second"]
    for run in runs:
        run["speedup_vs_batch_1"] = round(run["tokens_per_second"] / reference, 2)
    print(json.dumps({"model": "smollm2 (SmolLM2-135M-Instruct Q4_1 GGUF, de-quantized)", "device": args.device,
                      "torch_threads": torch.get_num_threads(), "load_seconds": round(load_seconds, 1),
                      "prompts": args.prompts, "max_new_tokens": args.max_new_tokens, "rounds": args.rounds,
                      "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
