"""LaMP prompt construction (Salemi et al., 2024): each retrieved profile item is rendered
with its task's template, the renderings are joined with ", and ", and the question
follows. One word budget is split evenly across the retrieved items; each item's long
field (article, abstract, review, description, tweet) is truncated to fit its share.
Budgets count whitespace words so that two different models see the same prompt.

The task is recognised from the profile item's fields (or a record's "task" key).
"""
from .retrieval import SKIP_FIELDS

# task: (fields that identify it, long field to truncate, template)
TEMPLATES = {
    "LaMP-1": ({"title", "abstract"}, "title", '"{title}"'),
    "LaMP-2": ({"description", "tag"}, "description", 'the tag for the movie: "{description}" is "{tag}"'),
    "LaMP-3": ({"text", "score"}, "text", '{score} is the score for "{text}"'),
    "LaMP-4": ({"title", "text"}, "text", '"{title}" is the title for "{text}"'),
    "LaMP-5": ({"title", "abstract"}, "abstract", '"{title}" is the title for "{abstract}"'),
    "LaMP-7": ({"text"}, "text", '"{text}"'),
}
DEFAULT_BUDGET = 256


def detect_task(record):
    """The LaMP task of a record: its "task" key, else from the profile's fields."""
    if record.get("task") in TEMPLATES or record.get("task") == "LaMP-6":
        return "LaMP-4" if record["task"] == "LaMP-6" else record["task"]
    profile = record.get("profile") or []
    if not profile:
        return "generic"
    fields = {k for k in profile[0] if k not in SKIP_FIELDS}
    if fields == {"title", "abstract"}:
        # LaMP-1 asks which of two papers the author would cite ("[1]" ... "[2]").
        return "LaMP-1" if "[1]" in record.get("input", "") else "LaMP-5"
    for task, (needed, _, _) in TEMPLATES.items():
        if task not in ("LaMP-1", "LaMP-5") and fields == needed:
            return task
    return "generic"


def _truncate(text, words):
    parts = str(text).split()
    return " ".join(parts[:max(words, 0)])


def render_item(item, task, words):
    """One profile item as text of at most about `words` words (long field truncated)."""
    if task == "generic":
        fields = [(k, str(v)) for k, v in item.items() if k not in SKIP_FIELDS]
        if not fields:
            return ""
        longest = max(range(len(fields)), key=lambda i: len(fields[i][1].split()))
        others = sum(len(k.split()) + len(v.split()) for i, (k, v) in enumerate(fields) if i != longest)
        fields[longest] = (fields[longest][0], _truncate(fields[longest][1], max(1, words - others - 1)))
        return "; ".join(f"{k}: {v}" for k, v in fields)
    _, long_field, template = TEMPLATES[task]
    values = {k: str(item.get(k, "")) for k in TEMPLATES[task][0]}
    # Words the template and the other fields take (the long field stands in as one word).
    fixed = len(template.format(**dict(values, **{long_field: "X"})).split()) - 1
    values[long_field] = _truncate(values[long_field], max(1, words - fixed))
    return template.format(**values)


def build_prompt(record, items, budget=DEFAULT_BUDGET):
    """The prompt for `record` with the retrieved profile `items` (may be empty)."""
    question = record["input"]
    if not items:
        return question
    task = detect_task(record)
    share = max(1, budget // len(items))
    joined = ", and ".join(render_item(item, task, share) for item in items)
    if task == "LaMP-7":
        return f"{joined} are written by this user. {question}"
    return f"{joined}. {question}"
