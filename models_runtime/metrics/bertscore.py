"""BERTScore (Zhang et al., 2020) over a sentence-transformers encoder.

Each text becomes its last-layer token embeddings (special tokens such as [CLS]/[SEP]
dropped, as BERTScore does); with cosine similarities S between candidate and reference
tokens, P = mean over candidate tokens of their best match, R = mean over reference tokens
of theirs, F = 2PR/(P+R). No idf weighting and no baseline rescaling.
"""
import numpy as np

from ..backends.registry import get_encoder


def greedy_match(cand, ref):
    """(P, R, F) from two token-embedding matrices (rows = tokens)."""
    cand = np.asarray(cand, dtype=float)
    ref = np.asarray(ref, dtype=float)
    if len(cand) == 0 or len(ref) == 0:
        return 0.0, 0.0, 0.0
    cand = cand / np.linalg.norm(cand, axis=1, keepdims=True)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    sim = cand @ ref.T
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def token_embeddings(texts, encoder=None, device=None, batch_size=32):
    """-> list of (n_tokens, dim) arrays, special tokens removed; `encoder` is a directory."""
    import torch

    transformer = get_encoder(encoder, device=device)[0]
    tokenizer = transformer.tokenizer
    model = transformer.auto_model
    out = []
    for start in range(0, len(texts), batch_size):
        part = texts[start:start + batch_size]
        enc = tokenizer(part, padding=True, truncation=True, max_length=transformer.max_seq_length,
                        return_tensors="pt", return_special_tokens_mask=True)
        keep = (enc.pop("special_tokens_mask") == 0) & (enc["attention_mask"] == 1)
        with torch.inference_mode():
            hidden = model(**{k: v.to(model.device) for k, v in enc.items()}).last_hidden_state.cpu()
        for row, mask in zip(hidden, keep):
            out.append(row[mask].numpy())
    return out


def bertscore_f1(candidates, references, encoder_path=None, device=None):
    cands = token_embeddings(list(candidates), encoder_path, device)
    refs = token_embeddings(list(references), encoder_path, device)
    return [greedy_match(c, r)[2] for c, r in zip(cands, refs)]
