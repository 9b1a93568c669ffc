"""Benchmark: EGISES-JSD on 1,000 documents x 4 users (target: under 2 s without the
preprocessing). Reference in the same run: a plain-Python per-pair JSD loop (dicts and
math.log2) over the same preprocessed tokens, then the same DEGRESS arithmetic.

    .venv/bin/python bench/egises_bench.py [--docs 1000] [--users 4]
"""
import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evaluation.personalization.egises import egises_from_distances, egises_from_tokens, tokenize_documents  # noqa: E402


def words(limit=6000):
    """Single-word English nouns from Debian's WordNet index (offline, realistic words)."""
    out = []
    with open("/usr/share/wordnet/index.noun") as handle:
        for line in handle:
            w = line.split(" ", 1)[0]
            if not line.startswith(" ") and w.isalpha() and len(w) > 3:
                out.append(w)
    step = max(1, len(out) // limit)
    return out[::step][:limit]


def make_documents(n_docs, n_users, seed=0):
    rng = np.random.default_rng(seed)
    vocab = words()
    docs = []
    for d in range(n_docs):
        body = list(rng.choice(vocab, 250))
        def summary(body=body):
            picked = list(rng.choice(body, 12)) + list(rng.choice(vocab, 4))
            return " ".join(picked)
        users = [f"u{k}" for k in range(n_users)]
        docs.append({"doc_id": f"d{d}", "title": " ".join(rng.choice(body, 6)),
                     "text": ". ".join(" ".join(body[i:i + 25]) for i in range(0, 250, 25)),
                     "references": {u: summary() for u in users},
                     "summaries": {u: summary() for u in users}})
    return docs


def plain_jsd(a, b):
    p, q = Counter(a), Counter(b)
    na, nb = sum(p.values()), sum(q.values())
    total = 0.0
    for w in set(p) | set(q):
        pw, qw = p[w] / na, q[w] / nb
        m = (pw + qw) / 2
        if pw:
            total += pw * math.log2(pw / m)
        if qw:
            total += qw * math.log2(qw / m)
    return total / 2


def reference_loop(prepared, id_to_word):
    sigmas = []
    for _, users, arrays in prepared:
        u = len(users)
        toks = [a.tolist() for a in arrays]
        doc, refs, sums = toks[0], toks[1:1 + u], toks[1 + u:]
        ref = [[plain_jsd(refs[j], refs[k]) if j != k else 0.0 for k in range(u)] for j in range(u)]
        mod = [[plain_jsd(sums[j], sums[k]) if j != k else 0.0 for k in range(u)] for j in range(u)]
        sigmas.append({"ref": ref, "ref_doc": [plain_jsd(r, doc) for r in refs],
                       "model": mod, "model_doc": [plain_jsd(s, doc) for s in sums]})
        [plain_jsd(sums[j], refs[j]) for j in range(u)]  # accuracy terms, as in egises()
    return egises_from_distances(sigmas)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--users", type=int, default=4)
    args = parser.parse_args()
    docs = make_documents(args.docs, args.users)
    start = time.perf_counter()
    prepared, errors, steps = tokenize_documents(docs)
    prep_s = time.perf_counter() - start
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = egises_from_tokens(prepared)
        best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    ref = reference_loop(prepared, None)
    ref_s = time.perf_counter() - start
    assert abs(ref["egises"] - result["egises"]) < 1e-9, (ref, result)
    print(json.dumps({
        "documents": args.docs, "users": args.users, "errors": len(errors),
        "preprocessing_s (first call includes loading WordNet)": prep_s,
        "preprocessing_steps": steps,
        "egises_s (best of 3, no preprocessing)": best,
        "plain_python_loop_s": ref_s, "loop_over_ours": ref_s / best,
        "egises": result["egises"], "accuracy": result["accuracy"],
    }, indent=1))


if __name__ == "__main__":
    main()
