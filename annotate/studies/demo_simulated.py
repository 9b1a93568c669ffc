"""The demo's one study with judgments: four systems compared in pairs, judged by twelve
*simulated* annotators, so a researcher's first click shows a full report (agreement with
intervals, the strengths with its forest plot and heat map, metric-vs-human correlations, the
datasheet) instead of empty pages.

Nothing here pretends to be real: the study's title and instructions say "simulated", the
annotators are `sim-annotator-NN` accounts without a password, and every answer is drawn
from a Bradley-Terry model with the strengths below (seeded, so the report is the same on
every machine). The items go through the batch importer and the judgments through
`import_judgments`, the same doors a lab's own files use.
"""
import csv
import io
import json
import math

import numpy as np

from annotate.models import Study
from annotate.studies.demo_data import SIMULATED_STUDY_KIND, unigram_f1
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from evaluation.vocabulary import CHOICE_QUESTION

SLUG = "demo-four-systems-simulated"
SEED = 20261205
N_ITEMS = 24
N_ANNOTATORS = 12
# True Bradley-Terry strengths (log scale) of the simulated systems, and a small pull towards
# the response shown first: the report should recover the order and find little position bias.
STRENGTHS = {"profile-rag": 0.9, "bm25-k2": 0.45, "no-profile": -0.35, "random-profile": -1.0}
FIRST_SHOWN_PULL = 0.15

TOPICS = ["folding bike", "lentil soup", "trail shoes", "rain jacket", "espresso grinder", "city marathon",
          "night train", "pottery class", "library app", "bass guitar", "tent for two", "garden hose"]
OPINIONS = ["worth every cent", "fine but overpriced", "a small letdown", "better than I hoped"]
DETAILS = ["the little things add up", "my partner disagrees", "I would buy it again", "setup took an hour"]


def _texts(index):
    """(request, the user's own text, {system: candidate text}) of item `index`: the better a
    system, the more of the user's own words and voice it keeps."""
    topic, opinion = TOPICS[index % len(TOPICS)], OPINIONS[index % len(OPINIONS)]
    detail = DETAILS[(index // len(OPINIONS)) % len(DETAILS)]
    own = f"My {topic}: {opinion}. Honestly, {detail}, and I say that as a picky person."
    candidates = {
        "profile-rag": f"My {topic}? {opinion.capitalize()}. Honestly {detail}, picky as I am.",
        "bm25-k2": f"The {topic} is {opinion}; {detail}.",
        "no-profile": f"This {topic} offers a good balance of quality and value for most buyers.",
        "random-profile": f"As a keen traveller I found the {topic} practical on long trips.",
    }
    return f"Write a short review of my {topic}.", own, candidates


def batch_bytes():
    header = {"study": {
        "slug": SLUG, "kind": SIMULATED_STUDY_KIND, "annotations_per_item": 6,
        "title": "Four systems, SIMULATED judgments (demo of a full report)",
        "instructions": ("**Simulated data.** The judgments of this demo study were drawn by a program from a "
                         "Bradley-Terry model, not given by people. Pick the response closer to the user's own text.")}}
    lines = [header]
    for index in range(N_ITEMS):
        request, own, candidates = _texts(index)
        lines.append({"item_id": f"sim-{index + 1:02d}", "input": request, "reference": own,
                      "candidates": [{"id": system, "text": text} for system, text in candidates.items()],
                      "metric_scores": {"unigram_f1": {system: round(unigram_f1(text, own), 4)
                                                       for system, text in candidates.items()}},
                      "meta": {"demo": True, "simulated": True}})
    return ("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n").encode("utf-8")


def judgments_csv():
    """Each item shows two of the six system pairs (rotating, so every pair is shown on 8
    items), each to 3 of the 12 annotators: 6 judgments an item, 3 votes a compared pair, so
    agreement and majorities mean something. A/B order is drawn at random."""
    rng = np.random.default_rng(SEED)
    systems = list(STRENGTHS)
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["study", "item_id", "annotator", "question", "value", "shown_order", "seconds",
                     "submitted_at"])
    for index in range(N_ITEMS):
        judges = rng.choice(N_ANNOTATORS, size=6, replace=False)
        shown_pairs = [pairs[(2 * index) % len(pairs)]] * 3 + [pairs[(2 * index + 1) % len(pairs)]] * 3
        for judge, (a, b) in zip(judges, shown_pairs):
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            margin = STRENGTHS[first] - STRENGTHS[second] + FIRST_SHOWN_PULL
            value = first if rng.random() < 1 / (1 + math.exp(-margin)) else second
            seconds = round(float(rng.lognormal(math.log(22.0), 0.4)), 1)
            writer.writerow([SLUG, f"sim-{index + 1:02d}", f"sim-annotator-{judge + 1:02d}", CHOICE_QUESTION,
                             value, f"{first}|{second}", seconds,
                             f"2026-12-01T{9 + index // 6:02d}:{(index % 6) * 10:02d}:00+00:00"])
    return out.getvalue().encode("utf-8")


def create_simulated_study(uploader=None):
    """Import the study and its judgments once; a second run changes nothing. Returns
    (study, judgments created)."""
    existing = Study.objects.filter(slug=SLUG).first()
    if existing is not None and existing.judgments.exists():
        return existing, 0
    result = import_batch_bytes(batch_bytes(), user=uploader, source="demo:simulated")
    loaded = import_judgments(io.BytesIO(judgments_csv()), user=uploader, source="demo:simulated")
    return result.study, loaded["created"]
