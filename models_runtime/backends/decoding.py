"""Batched decoding for local causal LMs that does not pay for what it does not need.

`model.generate` on a padded batch computes every row until the longest answer ends, and
computes the prompt tokens all rows share (the judge's instructions) once per row. Judge
prompts are long shared instructions followed by a short item, and their answers vary a
lot in length, so on a CPU most of a batch's time went there. This loop:

1. runs the longest token prefix common to all prompts once and copies its KV cache to
   every row (prefix sharing);
2. runs the rest of each prompt padded in the middle (prefix | pads | suffix, masked, with
   positions that skip the pads), keeping only the last position's logits;
3. decodes greedily or by temperature / top-p sampling and drops a row from the KV cache
   as soon as it emits an end-of-sequence token (row retirement).

Each sampled answer draws from its own generator, seeded by (seed, sample number, prompt
tokens), so an answer does not depend on which other prompts share its batch: batched
and one-at-a-time runs give the same texts, and so do re-runs.

It works on any Hugging Face decoder whose cache supports `batch_select_indices` and
`batch_repeat_interleave` (the default DynamicCache does).
"""
import hashlib
from dataclasses import dataclass

import torch


@dataclass
class Decoded:
    tokens: list  # generated token ids, end-of-sequence token excluded
    tokens_in: int  # prompt length in tokens


def common_prefix_length(rows):
    """Length of the longest token prefix shared by every row."""
    shortest = min(len(r) for r in rows)
    for k in range(shortest):
        token = rows[0][k]
        if any(r[k] != token for r in rows):
            return k
    return shortest


def row_seed(seed, sample, tokens):
    """The seed of one sampled answer: a function of the prompt, not of its batch."""
    digest = hashlib.sha256(f"{seed}:{sample}:{','.join(map(str, tokens))}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _choose(logits, temperature, top_p, generators):
    """Next token per row: argmax at temperature 0, else a top-p sample at `temperature`
    drawn with that row's generator."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        outside = sorted_probs.cumsum(dim=-1) - sorted_probs > top_p  # the top token always stays
        probs = probs.masked_fill(torch.zeros_like(outside).scatter(-1, order, outside), 0.0)
    # Drawn in vocabulary order: a tiny numeric difference between a batched and a single
    # run cannot reorder the candidates and so change the pick.
    return torch.cat([torch.multinomial(row, 1, generator=g) for row, g in zip(probs, generators)])


@torch.inference_mode()
def decode(model, rows, max_new_tokens, eos_ids, pad_id, samples=1, temperature=0.0, top_p=1.0,
           seed=0, device="cpu"):
    """Generate for every token row `samples` answers -> [[Decoded] * samples] per row."""
    if any(len(r) == 0 for r in rows):
        raise ValueError("cannot decode an empty prompt (0 tokens)")
    n_rows = len(rows) * samples
    prefix = min(common_prefix_length(rows), min(len(r) for r in rows) - 1)
    cache = None
    if prefix > 0:
        head = torch.tensor([rows[0][:prefix]], device=device)
        cache = model(input_ids=head, use_cache=True, logits_to_keep=1).past_key_values
        cache.batch_repeat_interleave(n_rows)
    tails = [r[prefix:] for r in rows for _ in range(samples)]
    width = max(len(t) for t in tails)
    ids = torch.full((n_rows, width), pad_id, dtype=torch.long)
    tail_mask = torch.zeros((n_rows, width), dtype=torch.long)
    for i, tail in enumerate(tails):
        ids[i, width - len(tail):] = torch.tensor(tail)
        tail_mask[i, width - len(tail):] = 1
    mask = torch.cat([torch.ones((n_rows, prefix), dtype=torch.long), tail_mask], dim=1).to(device)
    positions = (prefix + tail_mask.cumsum(dim=1) - 1).clamp(min=0).to(device)
    out = model(input_ids=ids.to(device), attention_mask=mask, position_ids=positions,
                past_key_values=cache, use_cache=True, logits_to_keep=1)
    cache, logits = out.past_key_values, out.logits[:, -1, :]
    next_position = positions[:, -1] + 1

    generators = [torch.Generator(device=device).manual_seed(row_seed(seed, s, r)) if temperature > 0 else None
                  for r in rows for s in range(samples)]
    generated = [[] for _ in range(n_rows)]
    alive = torch.arange(n_rows, device=device)  # original row index of each cache row
    eos = torch.tensor(sorted(eos_ids), device=device)
    for step in range(max_new_tokens):
        alive_rows = alive.tolist()
        chosen = _choose(logits, temperature, top_p, [generators[i] for i in alive_rows])
        done = torch.isin(chosen, eos)
        for row, token, finished in zip(alive_rows, chosen.tolist(), done.tolist()):
            if not finished:
                generated[row].append(token)
        if step == max_new_tokens - 1:
            break
        keep = (~done).nonzero().squeeze(-1)
        if keep.numel() == 0:
            break
        if keep.numel() < alive.numel():
            cache.batch_select_indices(keep)
            alive, chosen, mask, next_position = alive[keep], chosen[keep], mask[keep], next_position[keep]
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        out = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=next_position[:, None],
                    past_key_values=cache, use_cache=True, logits_to_keep=1)
        cache, logits = out.past_key_values, out.logits[:, -1, :]
        next_position = next_position + 1
    return [[Decoded(tokens=generated[r * samples + s], tokens_in=len(rows[r])) for s in range(samples)]
            for r in range(len(rows))]
