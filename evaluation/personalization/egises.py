"""EGISES / DEGRESS (iCOPERNICUS): how much a summarizer's outputs differ across readers
in proportion to how much the readers' own reference summaries differ.

Definitions in statistics.md. `variant="code"` (default) follows the reference code:
softmax and mean over k != j. `variant="paper"` is the appendix equation read literally:
the k = j terms (sigma = 0, so w = 0 and prop = 1) are also in the softmax sum and the mean.
"""
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evaluation.agreement import within_unit_pairs
from evaluation.bootstrap import bootstrap_interval, bootstrap_method, cluster_counts
from evaluation.text import preprocess

EPS = 1e-5
RESAMPLES = 2000  # bootstrap over documents
VARIANTS = ("code", "paper")


def degress_batch(sig_ref: ArrayLike, sig_ref_doc: ArrayLike, sig_model: ArrayLike, sig_model_doc: ArrayLike,
                  variant: str = "code") -> np.ndarray:
    """DEGRESS of N documents with U users each; NaN where a document has no usable pair.

    sig_ref, sig_model: (N, U, U) distances between the users' reference / model
    summaries; NaN marks a pair with no distance (left out for both origins).
    sig_ref_doc, sig_model_doc: (N, U) distances of each summary to its document.

    Two users, sigma_ref(1,2) = .4, sigma_model(1,2) = .2 (softmax over one k is 1):
    prop = (.2 + 1e-5)/(.4 + 1e-5) for both users:

    >>> ref, model = [[[0, .4], [.4, 0]]], [[[0, .2], [.2, 0]]]
    >>> round(float(degress_batch(ref, [[.8, .8]], model, [[.5, .5]])[0]), 6)
    0.500012
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be 'code' or 'paper', got {variant!r}")
    sig_ref, sig_model = np.asarray(sig_ref, float), np.asarray(sig_model, float)
    n_users = sig_ref.shape[-1]
    diagonal = np.eye(n_users, dtype=bool)
    use = np.isfinite(sig_ref) & np.isfinite(sig_model) & ~diagonal
    if variant == "paper":
        use |= diagonal
    sig_ref = np.where(use & ~diagonal, sig_ref, 0.0)
    sig_model = np.where(use & ~diagonal, sig_model, 0.0)

    def weighted(sig: np.ndarray, sig_doc: ArrayLike) -> np.ndarray:
        sig_doc = np.asarray(sig_doc, float)[..., :, None]
        w = np.where(sig_doc > 0, sig / np.where(sig_doc > 0, sig_doc, 1.0), 0.0)
        e = np.where(use, np.exp(w), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total > 0, total, 1.0) * sig

    x, y = weighted(sig_ref, sig_ref_doc), weighted(sig_model, sig_model_doc)
    prop = np.where(use, (np.minimum(x, y) + EPS) / (np.maximum(x, y) + EPS), 0.0)
    per_user = use.sum(axis=-1)
    rows = per_user > 0
    per_user_degress = np.where(rows, prop.sum(axis=-1) / np.where(rows, per_user, 1), 0.0)
    n_rows = rows.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_rows > 0, per_user_degress.sum(axis=-1) / n_rows, np.nan)


def degress_document(sig_ref: ArrayLike, sig_ref_doc: ArrayLike, sig_model: ArrayLike, sig_model_doc: ArrayLike,
                     variant: str = "code") -> float | None:
    """DEGRESS(d) of one document (U x U and length-U inputs, see `degress_batch`), or
    None if no user pair is usable."""
    value = degress_batch(np.asarray(sig_ref, float)[None], np.asarray(sig_ref_doc, float)[None],
                          np.asarray(sig_model, float)[None],
                          np.asarray(sig_model_doc, float)[None], variant)[0]
    return None if np.isnan(value) else float(value)


def egises_from_distances(documents: Iterable[dict[str, Any]], variant: str = "code") -> dict[str, Any]:
    """EGISES from precomputed distances.

    documents: iterable of dicts {"ref": UxU, "ref_doc": U, "model": UxU, "model_doc": U}
    (see `degress_batch`). Returns {"egises", "degress", "n_documents", "per_document":
    DEGRESS(d) of each input document, None where it has no usable pair}; documents with no
    usable pair are not counted; no usable document gives None.
    """
    by_size: dict[int, list[int]] = {}
    documents = list(documents)
    for k, d in enumerate(documents):
        by_size.setdefault(len(d["ref_doc"]), []).append(k)
    per_document: list[float | None] = [None] * len(documents)
    for positions in by_size.values():
        group = [documents[k] for k in positions]
        ref, ref_doc, model, model_doc = (np.array([d[key] for d in group], float)
                                          for key in ("ref", "ref_doc", "model", "model_doc"))
        for k, v in zip(positions, degress_batch(ref, ref_doc, model, model_doc, variant).tolist()):
            per_document[k] = None if math.isnan(v) else v
    values = [v for v in per_document if v is not None]
    if not values:
        return {"egises": None, "degress": None, "n_documents": 0, "per_document": per_document}
    degress = float(np.mean(values))
    return {"egises": 1.0 - degress, "degress": degress, "n_documents": len(values), "per_document": per_document}


def document_text(doc: dict[str, Any]) -> str:
    """Title and body joined by one space when a title exists."""
    title = doc.get("title")
    return f"{title} {doc['text']}" if title else doc["text"]


class _Tokens:
    """Preprocess each distinct text once; texts become word-id arrays."""

    def __init__(self, stopword_list: str = "nltk") -> None:
        self.vocab: dict[str, int] = {}
        self.cache: dict[str, np.ndarray] = {}
        self.steps: list[str] | None = None
        self.stopword_list = stopword_list

    def ids(self, text: Any, what: str) -> np.ndarray:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{what} is empty")
        if text not in self.cache:
            tokens, self.steps = preprocess(text, stopword_list=self.stopword_list)
            if not tokens:
                raise ValueError(f"{what} has no words left after preprocessing")
            self.cache[text] = np.array(
                [self.vocab.setdefault(t, len(self.vocab)) for t in tokens], dtype=np.int64)
        return self.cache[text]


def jsd_matrices(texts_per_document: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Pairwise JSD matrices of many documents' texts in one vectorized pass.

    texts_per_document: a list (per document) of lists of word-id arrays. Uses
    JSD = 1 + 1/2 sum over shared words of [p log2(p/(p+q)) + q log2(q/(p+q))], so only
    the (text, text, word) triples of words two texts share are ever formed.
    """
    sizes = np.array([len(texts) for texts in texts_per_document], dtype=np.int64)
    arrays = [a for texts in texts_per_document for a in texts]
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    text_of = np.repeat(np.arange(len(arrays)), lengths)
    doc_of_text = np.repeat(np.arange(len(sizes)), sizes)
    first_text = np.cumsum(sizes) - sizes
    words = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
    n_words = int(words.max()) + 1 if len(words) else 1
    keys, counts = np.unique(text_of * n_words + words, return_counts=True)
    text, word = keys // n_words, keys % n_words
    prob = counts / lengths[text]
    doc = doc_of_text[text]
    order = np.lexsort((text, word, doc))
    text, word, prob, doc = text[order], word[order], prob[order], doc[order]
    group = np.r_[0, np.cumsum((np.diff(word) != 0) | (np.diff(doc) != 0))]
    left, right = within_unit_pairs(group)
    p, q = prob[left], prob[right]
    terms = p * np.log2(p / (p + q)) + q * np.log2(q / (p + q))
    d = doc[left]
    local_a, local_b = text[left] - first_text[d], text[right] - first_text[d]
    cell_offset = np.cumsum(sizes**2) - sizes**2
    flat = np.bincount(cell_offset[d] + local_a * sizes[d] + local_b, weights=terms,
                       minlength=int((sizes**2).sum()))
    out = []
    for offset, size in zip(cell_offset.tolist(), sizes.tolist()):
        m = np.clip(1.0 + 0.5 * flat[offset:offset + size * size].reshape(size, size), 0.0, 1.0)
        np.fill_diagonal(m, 0.0)
        out.append(m)
    return out


def jsd_matrix(id_arrays: list[np.ndarray]) -> np.ndarray:
    """Pairwise JSD matrix of one document's texts given as word-id arrays."""
    return jsd_matrices([id_arrays])[0]


def _users(doc: dict[str, Any]) -> list[str]:
    refs, sums = doc.get("references") or {}, doc.get("summaries") or {}
    if set(refs) != set(sums):
        missing = sorted(set(refs) ^ set(sums), key=str)
        raise ValueError(f"users without both a reference and a summary: {missing}")
    users = sorted(refs, key=str)
    if len(users) < 2:
        raise ValueError("a document needs at least 2 users")
    return users


def tokenize_documents(documents: Iterable[dict[str, Any]], stopword_list: str = "nltk"
                       ) -> tuple[list[tuple[Any, list[str], list[np.ndarray]]], list[dict[str, Any]], list[str]]:
    """(prepared, errors, steps): per usable document (doc_id, users, id arrays of
    [document, references..., summaries...]); errors as {"doc_id", "error"}."""
    tok = _Tokens(stopword_list)
    prepared: list[tuple[Any, list[str], list[np.ndarray]]] = []
    errors: list[dict[str, Any]] = []
    for n, doc in enumerate(documents):
        doc_id = doc.get("doc_id", n)
        try:
            users = _users(doc)
            arrays = [tok.ids(document_text(doc), "document text")]
            arrays += [tok.ids(doc["references"][u], f"reference of user {u}") for u in users]
            arrays += [tok.ids(doc["summaries"][u], f"summary of user {u}") for u in users]
        except (ValueError, KeyError, TypeError) as exc:
            errors.append({"doc_id": doc_id, "error": str(exc)})
            continue
        prepared.append((doc_id, users, arrays))
    return prepared, errors, tok.steps or preprocess("x", stopword_list=stopword_list)[1]


def egises_from_tokens(prepared: list[tuple[Any, list[str], list[np.ndarray]]], variant: str = "code"
                       ) -> dict[str, Any]:
    """{"egises", "degress", "accuracy", "n_documents"} from `tokenize_documents` output."""
    sigmas, accuracy = [], []
    matrices = jsd_matrices([arrays for _, _, arrays in prepared])
    for (_, users, _), j in zip(prepared, matrices):
        u = len(users)
        refs, sums = slice(1, 1 + u), slice(1 + u, 1 + 2 * u)
        sigmas.append({"ref": j[refs, refs], "ref_doc": j[refs, 0],
                       "model": j[sums, sums], "model_doc": j[sums, 0]})
        accuracy.extend(np.diag(j[sums, refs]).tolist())
    result = egises_from_distances(sigmas, variant)
    result["accuracy"] = float(np.mean(accuracy)) if accuracy else None
    return result


def egises(documents: list[dict[str, Any]], variant: str = "code", stopword_list: str = "nltk") -> dict[str, Any]:
    """EGISES-JSD of one model over documents.

    documents: [{"doc_id", "text", "title"?, "references": {uid: text},
    "summaries": {uid: model summary for uid}}]. Returns {"egises", "degress",
    "accuracy", "n_documents", "preprocessing": steps, "errors": [{"doc_id", "error"}]}.
    `stopword_list`: "nltk" (the reference code's 179 words, default) or "sklearn".
    """
    prepared, errors, steps = tokenize_documents(documents, stopword_list)
    result = egises_from_tokens(prepared, variant)
    result.pop("per_document", None)  # manage.py egises prints this dict: its keys are interfaces.md's
    result["preprocessing"] = steps
    result["errors"] = errors
    return result


def _sigma_from_rating(ratings: Any, scale: tuple[float, float]) -> float:
    lo, hi = scale
    values = [ratings] if isinstance(ratings, (int, float)) else list(ratings)
    values = [float(v) for v in values if v is not None]
    if not values or any(math.isnan(v) for v in values):
        return math.nan
    return (hi - float(np.mean(values))) / (hi - lo)


def _pair_rating(table: dict[Any, Any], a: Any, b: Any) -> list[float] | None:
    """All ratings of the unordered user pair {a, b}: keys (a, b) and (b, a) pooled (a
    number counts as one rating); None if neither key exists."""
    found = [table[key] for key in ((a, b), (b, a)) if key in table]
    if not found:
        return None
    return [float(v) for r in found for v in ([r] if isinstance(r, int | float) else r) if v is not None]


def egises_hj(documents: list[dict[str, Any]], scale: tuple[float, float] = (1, 6), variant: str = "code",
              stopword_list: str = "nltk") -> dict[str, Any]:
    """EGISES-HJ for one (model, prompt style): sigma between summaries from survey ratings.

    documents: [{
        "doc_id": str, "text": str, "title": str (optional),
        "references": {uid: the user's own reference summary},
        "summaries": {uid: this model's summary for uid},
        "reference_ratings": {(uid_a, uid_b): mean rating or list of ratings},
        "model_ratings": {(uid_a, uid_b): mean rating or list of ratings},
    }]
    A user pair is unordered: the ratings under (a, b) and (b, a) are pooled. sigma =
    (max - mean) / (max - min) on `scale`; sigma to the document is JSD. A user pair missing either rating is skipped
    (left out of that document) and counted in "skipped".
    Returns {"egises_hj", "degress", "n_documents", "skipped", "errors", "preprocessing",
    "per_document": {doc_id: DEGRESS(d)} of the usable documents} (`egises_interval` turns
    the last into an interval over documents).

    statistics.md's minimal check: model ratings (a,b) 5 and (b,a) 1 pool to 3, sigma .6;
    reference 2, sigma .8; EGISES-HJ = 1 - (.6 + 1e-5)/(.8 + 1e-5):

    >>> doc = {"doc_id": "d", "text": "apple banana cherry date",
    ...        "references": {"a": "apple banana", "b": "cherry date"}, "summaries": {"a": "apple", "b": "date"},
    ...        "model_ratings": {("a", "b"): [5], ("b", "a"): [1]}, "reference_ratings": {("a", "b"): [2]}}
    >>> round(egises_hj([doc])["egises_hj"], 7)
    0.2499969
    """
    prepared, errors, steps = tokenize_documents(documents, stopword_list)
    by_id = {d.get("doc_id", n): d for n, d in enumerate(documents)}
    sigmas, skipped = [], 0
    for doc_id, users, arrays in prepared:
        doc, u = by_id[doc_id], len(users)
        j = jsd_matrix(arrays)
        ref, model = np.full((u, u), np.nan), np.full((u, u), np.nan)
        for a in range(u):
            for b in range(a + 1, u):
                r = _pair_rating(doc.get("reference_ratings") or {}, users[a], users[b])
                m = _pair_rating(doc.get("model_ratings") or {}, users[a], users[b])
                sr = _sigma_from_rating(r, scale) if r is not None else math.nan
                sm = _sigma_from_rating(m, scale) if m is not None else math.nan
                if math.isnan(sr) or math.isnan(sm):
                    skipped += 1
                    continue
                ref[a, b] = ref[b, a] = sr
                model[a, b] = model[b, a] = sm
        sigmas.append({"ref": ref, "ref_doc": j[1:1 + u, 0],
                       "model": model, "model_doc": j[1 + u:, 0]})
    result = egises_from_distances(sigmas, variant)
    degress = {doc_id: v for (doc_id, _, _), v in zip(prepared, result["per_document"]) if v is not None}
    return {"egises_hj": result["egises"], "degress": result["degress"],
            "n_documents": result["n_documents"], "skipped": skipped, "errors": errors, "preprocessing": steps,
            "per_document": degress}


def egises_interval(per_document: Mapping[Any, float], resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """EGISES = 1 - mean DEGRESS(d) over documents with its bootstrap interval over documents
    (statistics.md, "Clustered data"): {"egises", "n_documents", "ci95", "ci_method",
    "n_clusters", "dropped_resamples", "ci_reason" (when there is no interval)}. Documents
    are taken in sorted id order (str) and drawn as `bootstrap.cluster_counts` does.

    >>> r = egises_interval({"d1": 0.5, "d2": 0.7, "d3": 0.6, "d4": 0.8, "d5": 0.4})
    >>> round(r["egises"], 6), r["n_documents"], [round(v, 4) for v in r["ci95"]]
    (0.4, 5, [0.22, 0.58])
    """
    docs = sorted(per_document, key=str)
    values = np.array([per_document[d] for d in docs], dtype=float)
    out: dict[str, Any] = {"egises": None, "n_documents": len(docs), "ci95": None,
                           "ci_method": bootstrap_method("documents", resamples, seed), "n_clusters": len(docs),
                           "dropped_resamples": 0}
    if not len(docs):
        out["ci_reason"] = "no document"
        return out
    out["egises"] = 1.0 - float(np.mean(values))
    samples = np.concatenate([1.0 - (w @ values) / len(docs) for w in cluster_counts(len(docs), resamples, seed)])
    interval = bootstrap_interval(samples, out["egises"], len(docs))
    out.update(ci95=interval.ci95, dropped_resamples=interval.dropped)
    if interval.ci95 is None:
        out["ci_reason"] = interval.reason
    return out
