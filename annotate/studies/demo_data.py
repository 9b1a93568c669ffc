"""Demo studies, one per kind (`StudyKind.demo_batch`), with texts written for humeval (no
dataset is copied); this module holds the texts of the first four kinds and gathers every
registered kind's batch.

Each study has six or more items and one gold (attention-check) item whose answer is
obvious. Metric scores and ExPerT explanations are computed here from the texts and the
hand-written aspect matches (statistics.md formulas), so the demo's numbers are honest.
"""
import json
import re

from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from evaluation.vocabulary import CHOICE_QUESTION, DEFAULT_MODEL

# (item_id, request, the user's own text, candidate A (model "retrieval"), candidate B (model "plain"))
PAIRWISE = [
    ("review-bike", "Write a short review of the folding bike I bought last month.",
     "Folds in ten seconds, fits under my desk, and the hub gears never slip. Saddle is a plank though. Four stars.",
     "Folds in seconds and fits under a desk; the gears shift cleanly. The saddle is hard. Four stars from me.",
     "This folding bicycle offers an excellent combination of portability and performance, making it a superb choice "
     "for urban commuters."),
    ("email-landlord", "Email my landlord that the kitchen tap is leaking.",
     "Hi Marta, the kitchen tap drips all night again, worse since Sunday. Any chance someone can pass by Thursday? "
     "Cheers, Jon",
     "Dear Landlord, I am writing to inform you that the kitchen faucet is leaking. Please arrange a repair at your "
     "earliest convenience. Regards",
     "Hi Marta, the kitchen tap is dripping again, worse than last week. Could someone come by Thursday? Cheers, Jon"),
    ("tweet-marathon", "Post about finishing my first marathon.",
     "42.2 km. Legs are gone, heart is full. Thanks to everyone who yelled my name at km 35, you carried me.",
     "Finished my first marathon today! 42.2 km of pain and joy. Huge thanks to the crowd at km 35, you carried me "
     "home.",
     "Completing a marathon is a significant milestone that requires dedication, discipline and months of "
     "preparation."),
    ("recipe-note", "Write the intro for my lentil soup recipe.",
     "My grandmother never measured anything, so this is my best guess at her soup: red lentils, too much cumin, and "
     "lemon at the end.",
     "Lentil soup is a nutritious and affordable meal enjoyed around the world for centuries.",
     "Nobody in my family ever measured, so here is my best guess at my grandmother's soup: red lentils, lots of "
     "cumin, lemon to finish."),
    ("bio-talk", "Write my speaker bio for the local photography meetup.",
     "I shoot birds at dawn and people at weddings, and I still get nervous at both. Ask me about my broken tripods.",
     "I photograph birds at sunrise and couples at weddings, and both still make me nervous. Ask me about my broken "
     "tripods.",
     "An accomplished photographer with extensive experience across wildlife and event photography."),
    ("thanks-neighbour", "Write a thank-you note to my neighbour who watered my plants.",
     "Ines, the basil survived, which is more than I can say when I'm home. Coffee on me this week? Thank you!",
     "Dear neighbour, thank you very much for watering my plants while I was away. I appreciate it.",
     "Ines, the basil made it, which never happens when I'm home. Coffee's on me this week. Thank you!"),
    ("gold-pairwise", "Write a one-line reminder to buy milk.",
     "Buy milk on the way home.",
     "Remember to buy milk on the way home.",
     "The French Revolution began in 1789 with the storming of the Bastille."),
]
GOLD_PAIRWISE = {"gold-pairwise": "model-retrieval"}

# Hand-written ExPerT analyses for the explanation study: per item, the reference aspects,
# and per candidate its aspects and matches (reference aspect, generated aspect, content, style).
EXPLAINED = {
    "review-bike": (
        ["quick fold", "gear reliability", "hard saddle", "star rating"],
        {"model-retrieval": (["quick fold", "clean shifting", "hard saddle", "star rating"],
                             [("quick fold", "quick fold", True, True),
                              ("gear reliability", "clean shifting", True, True),
                              ("hard saddle", "hard saddle", True, False), ("star rating", "star rating", True, True)]),
         "model-plain": (["portability", "urban use"],
                         [("quick fold", "portability", True, False)])}),
    "email-landlord": (
        ["leaking tap", "getting worse", "visit request", "casual sign-off"],
        {"model-retrieval": (["leaking faucet", "repair request", "formal sign-off"],
                             [("leaking tap", "leaking faucet", True, False),
                              ("visit request", "repair request", True, False)]),
         "model-plain": (["dripping tap", "getting worse", "Thursday visit", "casual sign-off"],
                         [("leaking tap", "dripping tap", True, True), ("getting worse", "getting worse", True, True),
                          ("visit request", "Thursday visit", True, True),
                          ("casual sign-off", "casual sign-off", True, True)])}),
    "tweet-marathon": (
        ["distance", "exhaustion and joy", "thanks to the crowd"],
        {"model-retrieval": (["first marathon", "pain and joy", "thanks to the crowd"],
                             [("distance", "first marathon", True, True),
                              ("exhaustion and joy", "pain and joy", True, True),
                              ("thanks to the crowd", "thanks to the crowd", True, True)]),
         "model-plain": (["milestone", "preparation"],
                         [])}),
    "recipe-note": (
        ["grandmother's recipe", "no measuring", "ingredients"],
        {"model-retrieval": (["nutrition", "history of the dish"], []),
         "model-plain": (["family never measured", "grandmother's soup", "ingredients"],
                         [("no measuring", "family never measured", True, True),
                          ("grandmother's recipe", "grandmother's soup", True, True),
                          ("ingredients", "ingredients", True, True)])}),
    "bio-talk": (
        ["birds and weddings", "still nervous", "tripod joke"],
        {"model-retrieval": (["birds and weddings", "still nervous", "tripod joke"],
                             [("birds and weddings", "birds and weddings", True, True),
                              ("still nervous", "still nervous", True, True),
                              ("tripod joke", "tripod joke", True, True)]),
         "model-plain": (["experienced photographer", "wildlife and events"],
                         [("birds and weddings", "wildlife and events", True, False)])}),
    "thanks-neighbour": (
        ["basil survived", "self-deprecating joke", "coffee offer", "thanks"],
        {"model-retrieval": (["thanks", "plants watered"],
                             [("thanks", "thanks", True, False), ("basil survived", "plants watered", False, False)]),
         "model-plain": (["basil survived", "self-deprecating joke", "coffee offer", "thanks"],
                         [("basil survived", "basil survived", True, True),
                          ("self-deprecating joke", "self-deprecating joke", True, True),
                          ("coffee offer", "coffee offer", True, True), ("thanks", "thanks", True, True)])}),
    "gold-pairwise": (
        ["buy milk", "on the way home"],
        {"model-retrieval": (["buy milk", "on the way home"],
                             [("buy milk", "buy milk", True, True),
                              ("on the way home", "on the way home", True, True)]),
         "model-plain": (["historical fact"], [])}),
}

# (item_id, document title, document text, user ids, the two users' own headlines,
#  and per contrastive prompt style the model's headline for each user)
SIMILARITY = [
    ("doc-ferry", "Night ferry returns", "The island's night ferry will run again from May after a two-year pause, "
     "with fewer sailings but a new cabin deck for cyclists.", ["reader-7", "reader-12"],
     ["Bikes welcome: night ferry adds cyclist deck", "Island night ferry back in May, with fewer sailings"],
     {"C-0-shot": ["Night ferry returns in May", "Night ferry returns in May with fewer trips"],
      "C-2-shot w/o hist": ["Cyclists get a deck on returning night ferry", "Night ferry back, but sailings cut"],
      "C-2-shot w/ hist": ["New bike deck as night ferry restarts", "Fewer night sailings when ferry returns in May"]}),
    ("doc-library", "Library opens late", "The central library will stay open until 11 pm on weekdays during exam "
     "season, and adds quiet rooms that can be booked online.", ["reader-3", "reader-9"],
     ["Students cheer as library stays open to 11", "Book a quiet room online at the central library"],
     {"C-0-shot": ["Library extends hours for exams", "Library extends hours for exam season"],
      "C-2-shot w/o hist": ["Late nights at the library for exam crammers", "Quiet rooms now bookable at library"],
      "C-2-shot w/ hist": ["Exam season: library open until 11 pm", "Library adds online booking for quiet rooms"]}),
    ("doc-orchard", "Community orchard planted", "Volunteers planted forty apple and pear trees on the old rail "
     "yard; the fruit will be free to pick once the trees mature in about four years.", ["reader-1", "reader-4"],
     ["Free fruit coming to the old rail yard", "Forty trees turn rail yard green"],
     {"C-0-shot": ["Volunteers plant community orchard", "Volunteers plant an orchard at old rail yard"],
      "C-2-shot w/o hist": ["Pick free apples in four years", "Old rail yard becomes orchard"],
      "C-2-shot w/ hist": ["Orchard promises free fruit by 2030", "Forty apple and pear trees for rail yard"]}),
    ("doc-bus", "Bus fares frozen", "The city council froze bus fares for another year and will add a late-night "
     "line linking the hospital and the university.", ["reader-5", "reader-8"],
     ["Night workers get a hospital bus line", "No bus fare rise this year"],
     {"C-0-shot": ["Council freezes bus fares", "Council freezes bus fares again"],
      "C-2-shot w/o hist": ["New late bus serves hospital staff", "Bus fares stay the same"],
      "C-2-shot w/ hist": ["Late-night line to link hospital and campus", "Fare freeze extended for a year"]}),
    ("doc-pool", "Outdoor pool reopens", "After repairs to its heating, the outdoor pool reopens on Saturday with "
     "early swims from 6 am and a family hour on Sundays.", ["reader-2", "reader-6"],
     ["6 am swims are back at the outdoor pool", "Sunday family hour at reopened pool"],
     {"C-0-shot": ["Outdoor pool reopens Saturday", "Outdoor pool reopens on Saturday"],
      "C-2-shot w/o hist": ["Early birds: pool opens at 6 am", "Families get their own pool hour"],
      "C-2-shot w/ hist": ["Heated pool back with dawn swims", "Pool reopens with Sunday family hour"]}),
    ("doc-market", "Market moves indoors", "The Saturday farmers' market moves into the old tram depot for the winter, "
     "keeping its card payments and adding a hot food corner.", ["reader-10", "reader-11"],
     ["Hot food corner at winter market", "Farmers' market heads to tram depot"],
     {"C-0-shot": ["Market moves into tram depot", "Market moves indoors for winter"],
      "C-2-shot w/o hist": ["Warm up with hot food at the market", "Tram depot hosts winter market"],
      "C-2-shot w/ hist": ["Winter market adds hot food", "Saturday market relocates to depot"]}),
    ("gold-similarity", "Attention check", "This item checks attention: the model pair shows the same sentence twice.",
     ["reader-1", "reader-2"], ["Two short sentences about rain", "A headline about a parade"],
     {"C-0-shot": ["The same sentence twice.", "The same sentence twice."],
      "C-2-shot w/o hist": ["Rain falls on the town", "A parade fills the square"],
      "C-2-shot w/ hist": ["A rainy afternoon", "Music in the square"]}),
]
GOLD_SIMILARITY = {"gold-similarity": {"gold-similarity-C-0-shot": 6}}

# (item_id, premise, plot A, plot B)
STORIES = [
    ("plot-lighthouse", "A lighthouse keeper finds letters in the lamp room addressed to the next keeper.",
     "She answers them, and the replies that appear each morning are in her own handwriting, from forty years on. "
     "The last letter asks her to leave the light off one night.",
     "She hands the letters to the harbour office, which files them. Years later she retires and the next keeper reads "
     "them."),
    ("plot-orchestra", "A small-town orchestra loses its conductor a week before its only concert.",
     "The triangle player, who never reads music, takes the baton and conducts by ear; the concert is a mess "
     "that the town remembers fondly for decades.",
     "The orchestra cancels the concert and plans to try again next year with a new conductor."),
    ("plot-map", "A cartographer notices a street on her old maps that no longer exists.",
     "She walks to where it should be and finds a door in a wall; behind it, the street is still there, "
     "and the shops sell things the city forgot.",
     "She writes a report about the mapping error and it is corrected in the next edition."),
    ("plot-robot", "A delivery robot keeps taking the long way home.",
     "Its engineer follows it and discovers it stops at every school gate at 3 pm, where a girl waves at it; "
     "the engineer must decide whether to fix the route.",
     "The engineer resets the navigation software and the robot takes the short route from then on."),
    ("plot-garden", "Two rival gardeners are forced to share one allotment.",
     "They divide it with string, sabotage each other's beans, and end up entering the county show together "
     "with a hybrid pumpkin neither could have grown alone.",
     "They share the allotment politely, grow separate vegetables, and rarely speak."),
    ("plot-clock", "The town clock starts running backwards every night at midnight.",
     "Each night the town relives an hour of a day from its past, and a widower gets one more hour with his wife, "
     "until the clock mender arrives to repair it.",
     "The council pays for a new clock mechanism and the old one is put in the museum."),
    ("gold-story", "Attention check: choose Plot A for every question.",
     "Plot A: this is the plot to choose for every question of this item.",
     "Plot B: do not choose this plot."),
]
GOLD_STORY = {"gold-story": "plot-a"}


def _words(text):
    return re.findall(r"[a-z0-9']+", text.lower())


def unigram_f1(candidate, reference):
    """Word-overlap F1 (clipped counts): a simple, honest demo metric."""
    cand, ref = _words(candidate), _words(reference)
    if not cand or not ref:
        return 0.0
    remaining = {}
    for word in ref:
        remaining[word] = remaining.get(word, 0) + 1
    overlap = 0
    for word in cand:
        if remaining.get(word, 0) > 0:
            remaining[word] -= 1
            overlap += 1
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(cand), overlap / len(ref)
    return round(2 * precision * recall / (precision + recall), 4)


def expert_explanation(reference_aspects, generated_aspects, matches):
    """An ExPerT explanation object (runtime.md) from hand-written matches, scored with the
    statistics.md formulas: each side's aspects count 1/|side| times e (AVERAGE = 0.5c + 0.5s)."""
    def side_score(n_aspects, decisions, combine):
        return sum(combine(c, s) for c, s in decisions) / n_aspects if n_aspects else 0.0

    def f_score(p, r):
        return 2 * p * r / (p + r) if p + r else 0.0

    combiners = {"content": lambda c, s: float(c), "style": lambda c, s: float(s), "and": lambda c, s: float(c and s),
                 "or": lambda c, s: float(c or s), "average": lambda c, s: 0.5 * c + 0.5 * s}
    decisions = [(c, s) for _, _, c, s in matches]
    variants = {name: round(f_score(side_score(len(generated_aspects), decisions, fn),
                                    side_score(len(reference_aspects), decisions, fn)), 4)
                for name, fn in combiners.items()}
    recall = side_score(len(reference_aspects), decisions, combiners["average"])
    precision = side_score(len(generated_aspects), decisions, combiners["average"])
    def match(side, source, target, c, s, about):
        return {"side": side, "from": source, "to": target, "reason": f"both texts address {about}",
                "content_match": c, "content_reason": "same point" if c else "different point",
                "style_match": s, "style_reason": "same voice" if s else "different voice"}

    described = [match("recall", a, b, c, s, a) for a, b, c, s in matches]
    described += [match("precision", b, a, c, s, a) for a, b, c, s in matches]
    aspect = lambda name: {"aspect": name, "description": f"the text's {name}", "evidence": [name]}  # noqa: E731
    return {"score": variants["average"], "precision": round(precision, 4), "recall": round(recall, 4),
            "variants": variants, "aspects_reference": [aspect(a) for a in reference_aspects],
            "aspects_generated": [aspect(a) for a in generated_aspects], "matches": described,
            "llm_calls": 2 + len(reference_aspects) + len(generated_aspects) + 2 * len(matches)}


def _pairwise_item(entry):
    item_id, request, reference, text_a, text_b = entry
    candidates = [{"id": "model-retrieval", "text": text_a}, {"id": "model-plain", "text": text_b}]
    item = {"item_id": item_id, "input": request, "reference": reference, "candidates": candidates,
            "metric_scores": {"unigram_f1": {c["id"]: unigram_f1(c["text"], reference) for c in candidates}},
            "meta": {"demo": True}}
    if item_id in GOLD_PAIRWISE:
        item["gold"] = GOLD_PAIRWISE[item_id]
    return item


# The kind of the demo's study with simulated judgments (annotate/studies/demo_simulated.py):
# the ExPerT alignment study, compared over four systems.
SIMULATED_STUDY_KIND = PAIRWISE_ALIGNMENT


def pairwise_batch(slug):
    head = {"study": {"slug": slug, "kind": PAIRWISE_ALIGNMENT,
                      "title": "Which reply sounds like its author?",
                      "instructions": "Read the **request** and the author's **own text** first. Then pick the "
                                      "response that is closer to the author's text in content *and* writing style.",
                      "annotations_per_item": 3}}
    return [head] + [_pairwise_item(e) for e in PAIRWISE]


def explanation_batch(slug):
    head = {"study": {"slug": slug, "kind": EXPLANATION_CHOICE,
                      "title": "Which output is better, judging from its explanation?",
                      "instructions": "You only see how an evaluator analysed each output: the aspects it found, "
                                      "the evidence, and which aspects matched the author's own text. Decide which "
                                      "output is better, then rate how useful the explanations were.",
                      "annotations_per_item": 3}}
    items = []
    for entry in PAIRWISE:
        item = _pairwise_item(entry)
        reference_aspects, per_candidate = EXPLAINED[item["item_id"]]
        item["explanations"] = {cid: expert_explanation(reference_aspects, gen, matches)
                                for cid, (gen, matches) in per_candidate.items()}
        if "gold" in item:
            item["gold"] = {CHOICE_QUESTION: item["gold"]}
        items.append(item)
    return [head] + items


def similarity_batch(slug):
    head = {"study": {"slug": slug, "kind": SIMILARITY_SURVEY,
                      "title": "How similar are these two headlines?",
                      "instructions": "Each screen shows pairs of short headlines. Rate how similar the two "
                                      "texts of each pair are, from 1 (low) to 6 (very high).",
                      "annotations_per_item": 3}}
    items = []
    for item_id, title, text, users, references, generated in SIMILARITY:
        pairs = [{"id": f"{item_id}-reference", "source": "reference", "texts": references}]
        pairs += [{"id": f"{item_id}-{style}", "source": "model", "model": DEFAULT_MODEL, "prompt_style": style,
                   "texts": texts} for style, texts in generated.items()]
        item = {"item_id": item_id, "document": {"id": item_id, "title": title, "text": text}, "users": users,
                "pairs": pairs, "meta": {"demo": True}}
        if item_id in GOLD_SIMILARITY:
            item["gold"] = GOLD_SIMILARITY[item_id]
        items.append(item)
    return [head] + items


def story_batch(slug):
    head = {"study": {"slug": slug, "kind": ASPECT_PAIRWISE,
                      "title": "Which story plot do you prefer?",
                      "instructions": "Read the premise and both plots, then answer each question with your own "
                                      "taste: there are no right answers.",
                      "annotations_per_item": 3}}
    items = []
    for item_id, premise, plot_a, plot_b in STORIES:
        item = {"item_id": item_id, "premise": premise,
                "candidates": [{"id": "plot-a", "text": plot_a}, {"id": "plot-b", "text": plot_b}],
                "meta": {"demo": True}}
        if item_id in GOLD_STORY:
            item["gold"] = GOLD_STORY[item_id]
        items.append(item)
    return [head] + items


def demo_batches():
    """{kind: batch file bytes} of every registered kind's demo study."""
    from annotate.kinds import all_kinds

    return {kind.name: ("\n".join(json.dumps(o, ensure_ascii=False) for o in kind.demo_batch()) + "\n")
            .encode("utf-8") for kind in all_kinds()}
