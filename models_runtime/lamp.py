"""LaMP prompts and retrieval queries, following LaMP's own scripts (Salemi et al., 2024;
LaMP/prompts/prompts.py and prompts/utils.py of github.com/LaMP-Benchmark/LaMP).

Per task LaMP fixes three things, reproduced here exactly:
- the retrieval corpus text of a profile item (e.g. LaMP-5: `title abstract`),
- the retrieval query: the user's input without its task instruction (the text after
  "paper:", "article:", ...; LaMP-1: its two quoted candidate titles),
- the rendering of each retrieved item (note LaMP's trailing space) and how the
  renderings, joined with ", and ", surround the input (LaMP-5/7 end "Following the
  given patterns" before the input; LaMP-1 inserts them after the word "title").

LaMP truncates each item's long field by model tokens; we count whitespace words (one
budget split evenly across the items) so that two different models see the same prompt.
The task comes from a record's "task" key, else from its profile's fields.
"""
from collections.abc import Callable
from dataclasses import dataclass

from .retrieval import SKIP_FIELDS, item_text

DEFAULT_BUDGET = 256
FOLLOW = "Following the given patterns"


def quoted_strings(text: str) -> list[str]:
    """The substrings between successive pairs of double quotes."""
    parts = text.split('"')
    return [parts[i] for i in range(1, len(parts) - 1, 2)]


def after(marker: str) -> Callable[[str], str | None]:
    """Query maker: the input's text after the first `marker`, stripped (None if absent)."""
    def extract(text: str) -> str | None:
        at = text.find(marker)
        return None if at == -1 else text[at + len(marker):].strip()
    return extract


def citation_query(text: str) -> str | None:
    """LaMP-1: the two candidate paper titles (the 2nd and 3rd quoted strings)."""
    quoted = quoted_strings(text)
    return f"{quoted[1]} {quoted[2]}" if len(quoted) >= 3 else None


@dataclass(frozen=True)
class LampTask:
    fields: tuple[str, ...]  # the fields an item of this task has (detection)
    corpus: tuple[str, ...]  # retrieval text of an item: these fields joined by a space
    query: Callable[[str], str | None]
    long: str  # the field truncated to the budget
    item: str  # one retrieved item (LaMP's format string, trailing space included)
    wrap: str  # how the joined items ({items}) and the input ({input}) combine


TASKS = {
    "LaMP-1": LampTask(("title", "abstract"), ("title", "abstract"), citation_query, "title", '"{title}"', ""),
    "LaMP-2": LampTask(("description", "tag"), ("description",), after("description:"), "description",
                       'the tag for the movie: "{description}" is "{tag}" ', "{items}. {input}"),
    "LaMP-3": LampTask(("text", "score"), ("text",), after("review:"), "text", '{score} is the score for "{text}" ',
                       "{items}. {input}"),
    "LaMP-4": LampTask(("title", "text"), ("title", "text"), after("article:"), "text",
                       '"{title}" is the title for "{text}" ', "{items}. {input}"),
    "LaMP-5": LampTask(("title", "abstract"), ("title", "abstract"), after("paper:"), "abstract",
                       '"{title}" is a title for "{abstract}" ', "{items}. " + FOLLOW + " {input}"),
    "LaMP-6": LampTask(("title", "text"), ("text",), after(":"), "text", '"{title}" is the title for "{text}" ',
                       "{items}. {input}"),
    "LaMP-7": LampTask(("text",), ("text",), after(":"), "text", '"{text}" ',
                       "{items} are written by a person. " + FOLLOW + " {input}"),
}
TEMPLATES = TASKS  # the task names LaMP defines


def detect_task(record: dict) -> str:
    """The LaMP task of a record: its "task" key, else from the profile's fields
    (title+text is LaMP-4; LaMP-6 has the same fields and needs the key)."""
    if record.get("task") in TASKS:
        return record["task"]
    profile = record.get("profile") or []
    if not profile:
        return "generic"
    fields = {k for k in profile[0] if k not in SKIP_FIELDS}
    if fields == {"title", "abstract"}:
        # LaMP-1 asks which of two papers the author would cite ("[1]" ... "[2]").
        return "LaMP-1" if "[1]" in record.get("input", "") else "LaMP-5"
    for task in ("LaMP-2", "LaMP-3", "LaMP-4", "LaMP-7"):
        if fields == set(TASKS[task].fields):
            return task
    return "generic"


def retrieval_query(record: dict) -> str:
    """The query LaMP retrieves with: the input without the task instruction (the whole
    input when the task is unknown or its marker is missing)."""
    task = TASKS.get(detect_task(record))
    query = task.query(record["input"]) if task else None
    return query if query else record["input"]


def corpus_text(item: dict, task: str) -> str:
    """The text of a profile item that retrieval scores."""
    if task in TASKS:
        return " ".join(str(item.get(f, "")) for f in TASKS[task].corpus)
    return item_text(item)


def _truncate(text, words):
    return " ".join(str(text).split()[:max(words, 0)])


def render_generic(item: dict, words: int) -> str:
    """An item of an unknown task: `field: value` pairs, its longest field truncated."""
    fields = [(k, str(v)) for k, v in item.items() if k not in SKIP_FIELDS]
    if not fields:
        return ""
    longest = max(range(len(fields)), key=lambda i: len(fields[i][1].split()))
    others = sum(len(k.split()) + len(v.split()) for i, (k, v) in enumerate(fields) if i != longest)
    fields[longest] = (fields[longest][0], _truncate(fields[longest][1], max(1, words - others - 1)))
    return "; ".join(f"{k}: {v}" for k, v in fields)


def render_item(item: dict, task: str, words: int) -> str:
    """One profile item as LaMP renders it, its long field cut to about `words` words."""
    if task not in TASKS:
        return render_generic(item, words)
    spec = TASKS[task]
    values = {k: str(item.get(k, "")) for k in spec.fields}
    # Words the template and the other fields take (the long field stands in as one word).
    fixed = len(spec.item.format(**dict(values, **{spec.long: "X"})).split()) - 1
    values[spec.long] = _truncate(values[spec.long], max(1, words - fixed))
    return spec.item.format(**values)


def insert_after_title(text: str, addition: str) -> str:
    """LaMP-1: ", and <items>" right after the first "title" of the input."""
    at = text.find("title")
    return text if at == -1 else text[:at + 5] + ", and " + addition + text[at + 5:]


def build_prompt(record: dict, items: list, budget: int = DEFAULT_BUDGET) -> str:
    """The prompt for `record` with the retrieved profile `items` (may be empty)."""
    question = record["input"]
    if not items:
        return question
    task = detect_task(record)
    share = max(1, budget // len(items))
    joined = ", and ".join(render_item(item, task, share) for item in items)
    if task == "LaMP-1":
        return insert_after_title(question, joined)
    wrap = TASKS[task].wrap if task in TASKS else "{items}. {input}"
    return wrap.format(items=joined, input=question)
