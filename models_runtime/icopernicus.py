"""iCOPERNICUS prompt styles (Patel et al., 2024) for personalized headline generation.

Six styles under one total token budget. Each style is a fixed instruction plus parts
(document, click histories, example articles and headlines); the budget left after the
fixed text is shared between the parts by water-filling (a short part keeps all its
tokens, the rest split what is left equally), and each part is truncated to its share.
Plain styles use the target reader only; contrastive (C-) styles add a second reader of
the same document and ask for a headline that fits the target reader and not the other.
Prompt wording is ours. The run writes a survey batch (kind SIMILARITY_SURVEY) (reference pair + model
pairs of the contrastive styles) and the EGISES-JSD table per (model, style) that
`manage.py paradoxes` reads.
"""
import json
import re
from itertools import combinations
from pathlib import Path

from evaluation.csv_cells import SafeWriter
from evaluation.report.kinds import SIMILARITY_SURVEY
from evaluation.vocabulary import CONTRASTIVE_STYLES as CONTRASTIVE
from evaluation.vocabulary import PROMPT_STYLES as STYLES
from humeval.jsonl import json_lines
from models_runtime.backends.base import SamplingParams
from models_runtime.backends.config import model_spec
from models_runtime.job_support.job_inputs import check_lines
from models_runtime.job_support.kinds import JobKind, JobParamsError, file_sha256
from models_runtime.models import JobItem
from models_runtime.step import counting

DEFAULT_BUDGET = 1024
TASK = ("Write a news headline for the article below, personalized for the reader described. "
        "Answer with the headline only.")
C_TASK = ("Write a news headline for the article below, personalized for Reader 1. Reader 2 has "
          "different interests: the headline should suit Reader 1, not Reader 2. Answer with the headline only.")


class WhitespaceTokenizer:
    """Fallback when the backend has no tokenizer (e.g. an HTTP backend)."""

    def encode(self, text, add_special_tokens=False):
        return text.split()

    def decode(self, tokens, skip_special_tokens=True):
        return " ".join(tokens)


def encode(tokenizer, text):
    return list(tokenizer.encode(text, add_special_tokens=False))


def allocate(lengths, budget):
    """Water-filling: shares[i] <= lengths[i], sum(shares) <= budget, parts shorter than an
    equal share keep all their tokens and the rest split the remainder equally."""
    shares = [0] * len(lengths)
    remaining = max(0, budget)
    active = sorted(range(len(lengths)), key=lambda i: lengths[i])
    while active:
        fair = remaining // len(active)
        shortest = active[0]
        if lengths[shortest] <= fair:
            shares[shortest] = lengths[shortest]
            remaining -= lengths[shortest]
            active.pop(0)
            continue
        for i in active:
            shares[i] = fair
        break
    return shares


def _layout(style, doc, user, other):
    """(template with {0}, {1}... slots, [part texts], [part names]) for one style."""
    contrastive = style.startswith("C-")
    with_hist = style.endswith("w/ hist") or style.endswith("0-shot")
    two_shot = "2-shot" in style
    lines, parts, names = [C_TASK if contrastive else TASK], [], []

    def slot(label, text, name):
        lines.append(label + f"{{{len(parts)}}}")
        parts.append(text)
        names.append(name)

    readers = [("Reader 1", user, "user"), ("Reader 2", other, "other")] if contrastive else [("Reader", user, "user")]
    for label, reader, key in readers:
        if with_hist:
            slot(f"{label} clicked these headlines: ", "; ".join(reader.get("history", [])), f"{key}.history")
        if two_shot:
            examples = reader.get("examples", [])[: 1 if contrastive else 2]
            for n, ex in enumerate(examples, 1):
                slot(f"{label} example {n} article: ", ex["article"], f"{key}.example{n}.article")
                slot(f"{label} example {n} headline: ", ex["headline"], f"{key}.example{n}.headline")
    body = f"{doc['title']} {doc['text']}" if doc.get("title") else doc["text"]
    slot("Article: ", body, "document")
    lines.append("Headline:")
    return "\n".join(lines), parts, names


def build_prompt(style, doc, user, other, tokenizer, budget=DEFAULT_BUDGET):
    """-> (prompt text, {part name: tokens kept}). The whole text fits `budget` tokens as
    counted part by part; fixed text is never truncated."""
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r} (known: {', '.join(STYLES)})")
    template, parts, names = _layout(style, doc, user, other)
    fixed = len(encode(tokenizer, template.format(*([""] * len(parts)))))
    if fixed >= budget:
        raise ValueError(f"token budget {budget} is too small for style {style!r}: "
                         f"its fixed text alone has {fixed} tokens")
    tokens = [encode(tokenizer, p) for p in parts]
    shares = allocate([len(t) for t in tokens], budget - fixed)
    kept = [tokenizer.decode(t[:s], skip_special_tokens=True).strip() if s < len(t) else p
            for p, t, s in zip(parts, tokens, shares)]
    return template.format(*kept), {n: min(len(t), s) for n, t, s in zip(names, tokens, shares)} | {"fixed": fixed}


# "Reader 1:", "For Reader 2 -", "Reader (target):": the contrastive prompts name readers,
# and small models echo the name before the headline.
_READER = re.compile(r"^\W*(?:for\s+)?reader(?:\s*\d+)?\s*(?:\([^)]*\))?\s*[:\-\u2013]\s*", re.I)
_LABEL = re.compile(r"^\W*(?:personali[sz]ed\s+)?(?:news\s+)?headline\s*(?:for[^:]*)?[:\-]\s*", re.I)


def _clean_headline(line):
    """A candidate line without markdown, reader names, a "Headline:" label or quotes."""
    line = re.sub(r"[*#_`]+", "", line).strip()
    line = _READER.sub("", _LABEL.sub("", _READER.sub("", line))).strip()
    return re.sub(r"\s+", " ", line.strip("\"'“”‘’").strip())


def extract_headline(text):
    """The headline in a model's answer: the text after a "Headline:" label, else the first
    line with text; reader names ("Reader 1:"), quotes and markdown removed."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    labelled = [line for line in lines if _LABEL.match(_READER.sub("", re.sub(r"[*#_`]+", "", line)))]
    return next((c for c in map(_clean_headline, labelled + lines) if c), "")


def document_problems(doc) -> list[str]:
    """Why one input line is not a document {doc_id, text, users: {uid: {reference, ...}}}."""
    if not isinstance(doc, dict):
        return ["expected a JSON object"]
    missing = [k for k in ("doc_id", "text", "users") if k not in doc]
    if missing:
        return [f"missing {', '.join(missing)}"]
    if not isinstance(doc["users"], dict) or len(doc["users"]) < 2:
        return ["needs at least 2 users"]
    if any(not isinstance(u, dict) or not str(u.get("reference", "")).strip() for u in doc["users"].values()):
        return ["every user needs a non-empty reference"]
    return []


def read_documents(path):
    """The input JSONL (runtime.md); ValueError lists every bad line."""
    docs, errors = [], []
    with open(path, encoding="utf-8") as handle:
        for number, doc, error in json_lines(handle):
            if error:
                errors.append(f"line {number}: not JSON ({error.msg})")
                continue
            problems = document_problems(doc)
            if problems:
                errors.extend(f"line {number}: {why}" for why in problems)
            else:
                docs.append(doc)
    if errors:
        raise ValueError("\n".join(errors))
    if not docs:
        raise ValueError(f"{path}: no documents")
    return docs


def _other(uids, uid):
    """The contrast reader: the next user of the same document (cyclic, sorted ids)."""
    return uids[(uids.index(uid) + 1) % len(uids)]


def generate_headlines(docs, backend, budget=DEFAULT_BUDGET, max_new_tokens=32):
    """{(doc_id, uid, style): headline} for one model, all prompts in one backend call."""
    tokenizer = getattr(backend, "tokenizer", None) or WhitespaceTokenizer()
    keys, prompts = [], []
    for doc in docs:
        uids = sorted(doc["users"])
        for uid in uids:
            for style in STYLES:
                other = doc["users"][_other(uids, uid)]
                text, _ = build_prompt(style, doc, doc["users"][uid], other, tokenizer, budget)
                keys.append((doc["doc_id"], uid, style))
                prompts.append([{"role": "user", "content": text}])
    with counting(len(prompts), f"generations ({len(docs)} documents x users x {len(STYLES)} styles)"):
        outputs = backend.generate(prompts, SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0))
    return {key: extract_headline(gens[0].text) for key, gens in zip(keys, outputs)}


def _pair_id(model, style):
    return re.sub(r"[^a-z0-9]+", "-", f"{model} {style}".lower()).strip("-")


def survey_items(docs, headlines, models):
    """Survey items: per document and user pair, the reference pair and one
    pair per (model, contrastive style)."""
    items = []
    for doc in docs:
        for u0, u1 in combinations(sorted(doc["users"]), 2):
            pairs = [{"id": "reference", "source": "reference",
                      "texts": [doc["users"][u0]["reference"], doc["users"][u1]["reference"]]}]
            for model in models:
                for style in CONTRASTIVE:
                    pairs.append({"id": _pair_id(model, style), "source": "model", "model": model,
                                  "prompt_style": style, "texts": [headlines[model][(doc["doc_id"], u0, style)],
                                            headlines[model][(doc["doc_id"], u1, style)]]})
            document = {"id": doc["doc_id"], "text": doc["text"]}
            if doc.get("title"):
                document["title"] = doc["title"]
            items.append({"item_id": f"{doc['doc_id']}--{u0}--{u1}", "document": document, "users": [u0, u1],
                          "pairs": pairs})
    return items


def egises_table(docs, headlines, models):
    """({model: {style: EGISES-JSD or None}}, [per-document errors]) via evaluation.personalization.egises."""
    from evaluation.personalization.egises import egises

    table, errors = {}, []
    for model in models:
        table[model] = {}
        for style in STYLES:
            records = [{"doc_id": d["doc_id"], "text": d["text"], "title": d.get("title"),
                        "references": {u: v["reference"] for u, v in d["users"].items()},
                        "summaries": {u: headlines[model][(d["doc_id"], u, style)] for u in d["users"]}}
                       for d in docs]
            result = egises(records)
            table[model][style] = result["egises"]
            errors += [dict(e, model=model, prompt_style=style) for e in result["errors"]]
    return table, errors


def write_table(table, path):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = SafeWriter(handle)  # model names are spreadsheet-safe (evaluation.csv_cells)
        writer.writerow(["model", *STYLES])
        for model, row in table.items():
            writer.writerow([model, *("" if row[s] is None else repr(float(row[s])) for s in STYLES)])


def write_batch(items, path, slug):
    header = {"study": {"slug": slug, "kind": SIMILARITY_SURVEY,
                        "title": "How similar are these two headlines?",
                        "instructions": "Rate how similar the two texts are, from 1 (low) to 6 (very high)."}}
    with open(path, "w", encoding="utf-8") as handle:
        for row in [header, *items]:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_outputs(docs, headlines, models, out_batch, out_table, slug):
    """The survey batch and the EGISES-JSD table from every model's headlines. -> the
    result document of `generate icopernicus`."""
    items = survey_items(docs, headlines, models)
    table, errors = egises_table(docs, headlines, models)
    write_batch(items, out_batch, slug)
    write_table(table, out_table)
    return {"documents": len(docs), "generations": sum(len(h) for h in headlines.values()),
            "items": len(items), "egises": table, "errors": errors}


def run_icopernicus(input_path, models, out_batch, out_table, slug, device=None, progress=None,
                    budget=DEFAULT_BUDGET, max_new_tokens=32, backends=None):
    """Everything at once, in this process (the `icopernicus` job does the same model by
    model, resumably). `progress(done, total)` counts models. `backends` ({name: Backend})
    overrides the registry (tests)."""
    docs = read_documents(input_path)
    models = [m for m in (models.split(",") if isinstance(models, str) else models) if m]
    if not models:
        raise ValueError("no models given")
    headlines = {}
    for done, model in enumerate(models):
        if backends and model in backends:
            backend = backends[model]
        else:
            from models_runtime.backends.registry import get_backend
            backend = get_backend(model, device=device)
        headlines[model] = generate_headlines(docs, backend, budget, max_new_tokens)
        if progress:
            progress(done + 1, len(models))
    return write_outputs(docs, headlines, models, out_batch, out_table, slug)


# ---- the `icopernicus` job (`manage.py generate icopernicus`): one item per model -------

def validate_icopernicus(params):
    for key in ("input", "models", "out_batch", "out_table", "slug"):
        if not params.get(key):
            raise JobParamsError(f"generate icopernicus needs --{key.replace('_', '-')}")
    models = params["models"]
    models = [m.strip() for m in (models.split(",") if isinstance(models, str) else models) if m.strip()]
    if not models or len(set(models)) != len(models):
        raise JobParamsError("--models takes one or more different model names")
    for name in models:
        model_spec(name)
    if not check_lines(params["input"], lambda number, doc: document_problems(doc)):
        raise JobParamsError(f"{params['input']}: no documents")
    outs = {key: str(Path(params[key]).resolve()) for key in ("out_batch", "out_table")}
    for path in outs.values():
        if not Path(path).parent.is_dir():
            raise JobParamsError(f"the directory of {path} does not exist")
    return dict(params, models=models, input=str(Path(params["input"]).resolve()),
                input_sha256=file_sha256(params["input"]), **outs,
                budget=int(params.get("budget") or DEFAULT_BUDGET),
                max_new_tokens=int(params.get("max_new_tokens") or 32), chunk_size=1)


def icopernicus_items(job):
    return list(job.params["models"])


def icopernicus_chunk(job, models):
    from models_runtime.backends.registry import get_backend

    p = job.params
    docs = read_documents(p["input"])
    out = {}
    for model in models:
        found = generate_headlines(docs, get_backend(model, device=p.get("device")), p["budget"], p["max_new_tokens"])
        out[model] = {"headlines": [[doc_id, uid, style, text] for (doc_id, uid, style), text in found.items()]}
    return out


def icopernicus_finish(job):
    p = job.params
    headlines = {ji.key: {(d, u, s): text for d, u, s, text in ji.result["headlines"]}
                 for ji in JobItem.objects.filter(job=job)}
    return write_outputs(read_documents(p["input"]), headlines, p["models"], p["out_batch"], p["out_table"],
                         p["slug"])


ICOPERNICUS = JobKind("icopernicus", items=icopernicus_items, process_chunk=icopernicus_chunk,
                      finish=icopernicus_finish, validate=validate_icopernicus, chunk_size=1,
                      inputs=("input",), outputs=(("out_batch", "batch.jsonl"), ("out_table", "egises.csv")))
