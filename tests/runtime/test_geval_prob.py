"""geval_prob (G-Eval's probability-weighted score, Liu et al. 2023) on the embedded
SmolLM2 for real: scores in [1, 5], deterministic, and equal to sum_k k p(k) recomputed
here straight from transformers' model(...) logits; a server backend is refused."""
import pytest
import torch

from models_runtime.backends.openai_backend import OpenAIBackend
from models_runtime.backends.registry import get_backend
from models_runtime.judges import geval
from models_runtime.judges.geval_prob import NoTokenProbabilities, geval_prob_scores
from models_runtime.metrics.registry import get_metric

RECORDS = [{"input": "Generate a title for: we study graphs with method 3",
            "reference": "Studying graphs with method 3", "output": output}
           for output in ("Studying graphs with method 3", "Learning music", "hello", "")]


def recompute(backend, record):
    """sum_k k p(k), p the softmax of the last position's logits over the tokens "1".."5"."""
    tok, model = backend.tokenizer, backend.model
    text = tok.apply_chat_template(geval.prompt(record), add_generation_prompt=True, tokenize=False)
    ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(ids).logits[0, -1]
    digits = [tok.encode(str(k), add_special_tokens=False) for k in range(1, 6)]
    assert all(len(d) == 1 for d in digits)
    p = torch.softmax(logits[[d[0] for d in digits]].double(), dim=0)
    return float(sum(k * p[k - 1] for k in range(1, 6)))


@pytest.mark.model
def test_geval_prob_is_the_expected_rating_of_smollm2():
    backend = get_backend("smollm2", device="cpu")
    scores = get_metric("geval_prob")(RECORDS, model="smollm2", device="cpu")
    assert len(scores) == len(RECORDS) and all(1.0 <= s <= 5.0 for s in scores)
    assert geval_prob_scores(RECORDS, backend) == scores  # deterministic
    assert scores == pytest.approx([recompute(backend, r) for r in RECORDS], abs=1e-6)
    assert len(set(scores)) == len(scores)  # not degenerate: each output its own score


def test_geval_prob_refuses_a_server_backend():
    backend = OpenAIBackend("server", {"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(NoTokenProbabilities, match="geval_prob needs the next-token probabilities"):
        geval_prob_scores(RECORDS, backend)
    assert geval_prob_scores([], get_backend("smollm2", device="cpu")) == []
