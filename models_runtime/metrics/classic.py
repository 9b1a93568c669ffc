"""Reference-based metrics: ROUGE-1/ROUGE-L F1 (rouge-score, no stemming), sentence BLEU
(sacrebleu, default 13a tokenizer and exp smoothing, divided by 100), METEOR (NLTK with
WordNet built offline from Debian files), BERTScore F1 (our own greedy matching over the
encoder's last-layer token embeddings). All scores are in [0, 1]; a record without a
reference or output scores None.
"""
from .bertscore import bertscore_f1
from .registry import register_metric


def _usable(record):
    return bool((record.get("reference") or "").strip()) and record.get("output") is not None


def _each(records, fn):
    return [fn(r["output"], r["reference"]) if _usable(r) else None for r in records]


_rouge_scorer = None


def _rouge():
    global _rouge_scorer
    if _rouge_scorer is None:
        from rouge_score import rouge_scorer
        _rouge_scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=False)
    return _rouge_scorer


@register_metric("rouge1")
def rouge1(records, *, model=None, device=None):
    return _each(records, lambda out, ref: _rouge().score(ref, out)["rouge1"].fmeasure)


@register_metric("rougeL")
def rouge_l(records, *, model=None, device=None):
    return _each(records, lambda out, ref: _rouge().score(ref, out)["rougeL"].fmeasure)


@register_metric("bleu")
def bleu(records, *, model=None, device=None):
    import sacrebleu

    return _each(records, lambda out, ref: sacrebleu.sentence_bleu(out, [ref]).score / 100.0)


def _meteor_one(out, ref):
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([ref.split()], out.split()))


@register_metric("meteor")
def meteor(records, *, model=None, device=None):
    from evaluation.offline_nltk import ensure_wordnet

    ensure_wordnet()
    return _each(records, _meteor_one)


@register_metric("bertscore", model_kind="encoder")
def bertscore(records, *, model=None, device=None):
    """`model` here is an encoder directory (default HUMEVAL_ENCODER_PATH / embedded MiniLM)."""
    usable = [i for i, r in enumerate(records) if _usable(r)]
    scores = [None] * len(records)
    if usable:
        values = bertscore_f1([records[i]["output"] for i in usable], [records[i]["reference"] for i in usable],
                              encoder_path=model, device=device)
        for i, v in zip(usable, values):
            scores[i] = v
    return scores
