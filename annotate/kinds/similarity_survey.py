"""similarity_survey: the iCOPERNICUS EGISES-HJ human survey (spec studies.md).

An item: a `document`, two `users`, and `pairs` {id, source, texts: [for users[0], for
users[1]], model?, prompt_style?}, exactly one with source `reference`. The annotator is
not told what the texts are: each pair is "Text 1 / Text 2" (pair order and text order
shuffled per annotator, seeded) rated on `scale` (default 1-6). Question ids are the pair
ids. The document is not shown. Report: evaluation.report.kinds.similarity_survey.
shown_order: {"pair_order": [pair ids], <pair id>: ["0", "1"] or ["1", "0"]}.
"""
from annotate.kinds.base import PAIR_ORDER_KEY, SCALE_SCHEMA, StudyKind, check_scale, id_flaw, is_text, scale_of

DEFAULT_SCALE = (1, 6)
QUESTION_TEXT = "How similar are Text 1 and Text 2?"
SOURCES = ("reference", "model")


class SimilaritySurvey(StudyKind):
    name = "similarity_survey"
    order = 3
    item_keys = ("document", "users", "pairs")
    header_keys = ("scale",)
    scale_words = ("low similarity", "very high similarity")
    report_item_keys = ("document", "users", "pairs")  # EGISES-HJ needs the texts
    blind_question_ids = True  # pair ids say where a text came from (doc-ferry-reference)
    inline_questions = True  # each pair's rating sits under its two texts
    demo_slug = "demo-similarity"
    header_schema = {"scale": {**SCALE_SCHEMA, "description": "The rating scale [min, max], default [1, 6]."}}
    display_schema = {"pairs": {"type": "array", "description": "In the order shown.", "items": {
        "type": "object", "properties": {
            "id": {"type": "string", "description": "The question key of this pair (an opaque token, per assignment)."},
            "texts": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2,
                      "description": "Text 1 and Text 2, in the order shown."}}}}}

    def header_config(self, study, error):
        if "scale" not in study:
            return {}
        reason = check_scale(study["scale"], "scale")
        if reason:
            error(reason)
            return {}
        return {"scale": list(study["scale"])}

    def check_item(self, obj, config, error):
        document, users = obj["document"], obj["users"]
        if not (isinstance(document, dict) and is_text(document.get("id")) and is_text(document.get("text"))):
            error("'document' must be an object with non-empty 'id' and 'text'")
        elif "title" in document and not isinstance(document["title"], str):
            error("'document.title' must be a string")
        if not (isinstance(users, list) and len(users) == 2 and all(is_text(u) for u in users)):
            error("'users' must be a list of exactly 2 non-empty user ids")
        elif users[0] == users[1]:
            error("'users' must be 2 different user ids")
        self.check_pairs(obj["pairs"], error)

    def check_pairs(self, pairs, error):
        if not isinstance(pairs, list) or not pairs:
            error("'pairs' must be a non-empty list")
            return
        seen, n_reference = set(), 0
        for n, pair in enumerate(pairs, 1):
            if not isinstance(pair, dict):
                error(f"pair {n} must be an object")
                continue
            self.check_pair_id(pair.get("id"), seen, f"pair {n}", error)
            if pair.get("source") not in SOURCES:
                error(f"pair {n}: 'source' must be 'reference' or 'model'")
            n_reference += pair.get("source") == "reference"
            texts = pair.get("texts")
            if not (isinstance(texts, list) and len(texts) == 2 and all(is_text(t) for t in texts)):
                error(f"pair {n}: 'texts' must be exactly 2 non-empty strings")
            for key in ("model", "prompt_style"):
                if key in pair and not isinstance(pair[key], str):
                    error(f"pair {n}: '{key}' must be a string")
        if n_reference != 1:
            error(f"'pairs' must have exactly one pair with source 'reference', got {n_reference}")

    @staticmethod
    def check_pair_id(pid, seen, where, error):
        flaw = id_flaw(pid)
        if flaw:
            error(f"{where}: 'id' {flaw}")
        elif pid in seen:
            error(f"{where}: duplicate pair id {pid!r}")
        else:
            seen.add(pid)

    def gold_answers(self, gold, questions, error):
        error("'gold' must be an object {pair id: rating}")
        return None

    def questions(self, config, item_data):
        lo, hi = scale_of(config, "scale", DEFAULT_SCALE)
        return [{"id": pair["id"], "text": QUESTION_TEXT, "scale": [lo, hi]} for pair in item_data["pairs"]]

    def report_config(self, config):
        return dict(config, scale=list(scale_of(config, "scale", DEFAULT_SCALE)))

    def shown_order(self, item_data, config, randomize, rng, previous_orders):
        pair_ids = [p["id"] for p in item_data["pairs"]]
        if randomize:
            rng.shuffle(pair_ids)
        shown = {PAIR_ORDER_KEY: pair_ids}
        for pid in pair_ids:
            flip = randomize and rng.random() < 0.5
            shown[pid] = ["1", "0"] if flip else ["0", "1"]
        return shown

    def display(self, item_data, shown_order):
        by_id = {p["id"]: p for p in item_data["pairs"]}
        pairs = []
        for pid in shown_order.get(PAIR_ORDER_KEY) or list(by_id):
            texts = by_id[pid]["texts"]
            pairs.append({"id": pid, "texts": [texts[int(i)] for i in shown_order.get(pid) or ["0", "1"]]})
        return {"pairs": pairs}

    def blind_display(self, display, blinding):
        return {**display, "pairs": [{**p, "id": blinding.question(p["id"])} for p in display["pairs"]]}

    def page_display(self, display, questions, labels):
        """Each pair is numbered and carries its rating question (drawn under its texts)."""
        return {**display, "pairs": [{**p, "number": n, "legend": f"Pair {n}", "question": questions[p["id"]]}
                                     for n, p in enumerate(display["pairs"], start=1)]}

    def order_questions(self, questions, shown_order):
        rank = {pid: i for i, pid in enumerate(shown_order.get(PAIR_ORDER_KEY) or [])}
        return sorted(questions, key=lambda q: rank.get(q["id"], len(rank))) if rank else questions

    def example_header(self):
        return {"scale": [1, 6]}

    def example_item(self, i):
        """Document doc<i> of users u1 and u2: their reference pair and three model pairs."""
        pairs = [{"id": "ref", "source": "reference", "texts": [f"u1 summary {i}", f"u2 summary {i}"]}]
        pairs += [{"id": f"p{k}", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
                   "texts": [f"model text {k} for u1", f"model text {k} for u2"]} for k in (1, 2, 3)]
        return {"item_id": f"ex-{i}", "document": {"id": f"doc{i}", "text": "A long news article."},
                "users": ["u1", "u2"], "pairs": pairs}

    def demo_batch(self):
        from annotate.studies.demo_data import similarity_batch

        return similarity_batch(self.demo_slug)


KIND = SimilaritySurvey()
