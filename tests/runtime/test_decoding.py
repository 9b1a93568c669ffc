"""The shared-prefix decoder (models_runtime/backends/decoding.py) on the real embedded
SmolLM2: token-for-token equal to transformers' own greedy `generate` run one prompt at a
time, rows retired at their end-of-sequence token, sampled answers independent of their
batch, and the settings that steer it (torch threads, decoding, no generation cache)."""
import pytest
import torch

from models_runtime.backends import registry
from models_runtime.backends.base import SamplingParams
from models_runtime.backends.config import ModelNotAvailable, embedded_llm_spec
from models_runtime.backends.decoding import common_prefix_length, decode, row_seed
from models_runtime.backends.registry import generation_cache, get_backend
from models_runtime.backends.transformers_backend import TransformersBackend, apply_torch_threads

# Two chat prompts with one long shared head (the judge instructions) and tails of
# different lengths, and one prompt that shares only the chat template's opening.
INSTRUCTIONS = "Answer with JSON only. Say whether the two aspects below match in content. "
PROMPTS = [INSTRUCTIONS + "Aspect 1: clean room. Aspect 2: spotless room.",
           INSTRUCTIONS + "Aspect 1: cold breakfast served late every single morning. Aspect 2: kind staff.",
           "Name a colour of the sky."]


def test_common_prefix_length():
    assert common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_length([[5, 6], [5, 6]]) == 2
    assert common_prefix_length([[1], [2, 3]]) == 0
    with pytest.raises(ValueError, match="empty prompt"):
        decode(None, [[1, 2], []], 4, {0}, 0)


def test_row_seed_depends_on_the_prompt_and_sample_only():
    assert row_seed(0, 0, [1, 2, 3]) == row_seed(0, 0, [1, 2, 3])
    assert len({row_seed(0, 0, [1, 2, 3]), row_seed(0, 1, [1, 2, 3]), row_seed(1, 0, [1, 2, 3]),
                row_seed(0, 0, [1, 2, 4])}) == 4
    assert 0 <= row_seed(7, 3, [9]) < 2 ** 63


@pytest.fixture
def backend(settings):
    settings.HUMEVAL_GENERATION_CACHE = ""
    return get_backend("smollm2", device="cpu")


def _rows(backend, prompts):
    return [backend.tokenizer(backend.render(p), add_special_tokens=False)["input_ids"] for p in prompts]


@pytest.mark.model
@pytest.mark.slow
def test_greedy_batch_equals_hf_generate_one_prompt_at_a_time(backend):
    """The reference: `model.generate` greedy on each prompt alone (no padding at all)."""
    rows = _rows(backend, PROMPTS)
    assert common_prefix_length(rows[:2]) > 20  # the instructions really are shared
    reference = []
    with torch.inference_mode():
        for row in rows:
            out = backend.model.generate(torch.tensor([row]),
                                         attention_mask=torch.ones((1, len(row)), dtype=torch.long),
                                         max_new_tokens=12, do_sample=False, temperature=None, top_p=None, top_k=None,
                                         pad_token_id=backend.tokenizer.pad_token_id)
            tokens = out[0, len(row):].tolist()
            cut = next((k for k, t in enumerate(tokens) if t in backend.eos_ids), len(tokens))
            reference.append(tokens[:cut])
    for group in (rows[:2], rows):  # a long shared prefix, and almost none
        decoded = decode(backend.model, group, 12, backend.eos_ids, backend.tokenizer.pad_token_id)
        assert [d[0].tokens for d in decoded] == reference[:len(group)]
        assert [d[0].tokens_in for d in decoded] == [len(r) for r in group]


@pytest.mark.model
@pytest.mark.slow
def test_rows_retire_at_end_of_sequence(backend):
    """A prompt whose answer ends early stops there while the others run to the limit;
    its tokens are the same as when it runs alone."""
    prompts = ["Reply with the single word yes.", "Write a long story about a dragon and a castle."]
    rows = _rows(backend, prompts)
    together = decode(backend.model, rows, 40, backend.eos_ids, backend.tokenizer.pad_token_id)
    alone = decode(backend.model, rows[:1], 40, backend.eos_ids, backend.tokenizer.pad_token_id)
    short, long = len(together[0][0].tokens), len(together[1][0].tokens)
    assert short < 40 and long == 40
    assert together[0][0].tokens == alone[0][0].tokens


@pytest.mark.model
@pytest.mark.slow
def test_sampled_answers_do_not_depend_on_their_batch(backend):
    params = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.9, n=3, seed=5)
    backend.batch_size = 8
    batched = backend.generate(PROMPTS, params)
    alone = [backend.generate([p], params)[0] for p in PROMPTS]
    texts = [[g.text for g in gens] for gens in batched]
    assert texts == [[g.text for g in gens] for gens in alone]
    assert all(len(set(t)) > 1 for t in texts)  # three different samples per prompt
    other_seed = backend.generate(PROMPTS[:1],
                                  SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.9, n=3, seed=6))
    assert [g.text for g in other_seed[0]] != texts[0]


@pytest.mark.model
@pytest.mark.slow
def test_shared_prefix_and_generate_decoding_agree(backend):
    """The same backend with {"decoding": "generate"} (left-padded model.generate) gives the
    same greedy texts."""
    params = SamplingParams(max_new_tokens=10)
    ours = [g[0].text for g in backend.generate(PROMPTS, params)]
    hf = TransformersBackend("smollm2-hf", dict(embedded_llm_spec(), decoding="generate"), device="cpu")
    assert [g[0].text for g in hf.generate(PROMPTS, params)] == ours
    with pytest.raises(ModelNotAvailable, match="decoding must be"):
        TransformersBackend("bad", dict(embedded_llm_spec(), decoding="beam"), device="cpu")


def test_torch_threads_setting(settings):
    before = torch.get_num_threads()
    try:
        settings.HUMEVAL_TORCH_THREADS = 1
        assert apply_torch_threads(torch) == 1 and torch.get_num_threads() == 1
        settings.HUMEVAL_TORCH_THREADS = 0  # 0: leave torch's choice alone
        assert apply_torch_threads(torch) == 1
        assert apply_torch_threads(torch, 2) == 2  # a model's own {"threads": 2} wins
    finally:
        torch.set_num_threads(before)


def test_empty_generation_cache_setting_turns_the_cache_off(settings, tmp_path):
    registry.clear()
    settings.HUMEVAL_GENERATION_CACHE = ""
    assert generation_cache() is None
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "g.sqlite3")
    assert generation_cache().path == tmp_path / "g.sqlite3"
    registry.clear()
