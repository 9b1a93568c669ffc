"""The checker that reads a plan's parts (`Check`: every problem at once, `where: what`), the
generation options every generating step shares (`check_generation`, also `generate rag`'s)
and where a plan's named input file is (`resolve_file`). Below plans.py, rag.py and
ip/plan.py, so that each can use them without importing the plan (one direction:
plans -> pipeline -> steps).
"""
from pathlib import Path

from ..backends.base import POSTPROCESSORS
from ..job_support.kinds import JobParamsError
from ..lamp import DEFAULT_BUDGET
from .suggest import did_you_mean

GENERATION_KEYS = ("max_tokens", "temperature", "stop", "postprocess", "budget")
# (low, high, default) of every number a plan takes
BOUNDS = {"k": (1, 1000, 1), "max_tokens": (1, 8192, 64), "temperature": (0.0, 2.0, 0.0),
          "budget": (1, 100_000, DEFAULT_BUDGET)}
MAX_STOP, MAX_STOP_CHARS, MAX_NAMES = 16, 200, 32


def shown(value) -> str:
    """A value in a message: its type for a container, else its repr, cut short."""
    if isinstance(value, (dict, list)):
        return f"a {'JSON object' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class Check:
    """Collects `where: what` errors while reading a plan."""

    def __init__(self):
        self.errors: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.errors.append(f"{where}: {what}")

    def keys(self, obj: dict, where: str, allowed) -> None:
        for key in obj:
            if key not in allowed:
                self.add(f"{where}.{key}" if where else str(key),
                         f"unknown key{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}")

    def number(self, obj: dict, key: str, where: str, integer: bool = True):
        """obj[key] within BOUNDS[key] (its default when absent); None when bad."""
        low, high, default = BOUNDS[key]
        value = obj.get(key, default)
        kind = "an integer" if integer else "a number"
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if not ok or isinstance(value, bool):
            self.add(f"{where}.{key}", f"must be {kind} from {low} to {high}, got {shown(value)}")
            return None
        if not low <= value <= high or value != value:
            self.add(f"{where}.{key}", f"must be from {low} to {high}, got {shown(value)}")
            return None
        return value if integer else float(value)

    def names(self, value, where: str) -> list[str]:
        if value is None:
            return []
        if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)) or len(value) > MAX_NAMES:
            self.add(where, f"must be a list of at most {MAX_NAMES} names, got {shown(value)}")
            return []
        return list(dict.fromkeys(value))


def check_generation(check: Check, gen, where: str = "generation") -> dict:
    """The generation options with their defaults (also `generate rag`'s)."""
    if gen is None:
        gen = {}
    if not isinstance(gen, dict):
        check.add(where, f"must be an object {{max_tokens, temperature, stop, postprocess, budget}}, got {shown(gen)}")
        gen = {}
    check.keys(gen, where, GENERATION_KEYS)
    stop = gen.get("stop", [])
    if isinstance(stop, list) and len(stop) > MAX_STOP:
        check.add(f"{where}.stop", f"must be a list of at most {MAX_STOP} strings, got {len(stop)}")
        stop = []
    if not (isinstance(stop, list) and len(stop) <= MAX_STOP
            and all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_CHARS for s in stop)):
        check.add(f"{where}.stop", f"must be a list of at most {MAX_STOP} non-empty strings of at most "
                                   f"{MAX_STOP_CHARS} characters, got {shown(stop)}")
        stop = []
    post = gen.get("postprocess", "")
    if post is None:
        post = ""
    if post not in POSTPROCESSORS:
        check.add(f"{where}.postprocess", f"must be first_line or title (or left out), got {shown(post)}"
                                          f"{did_you_mean(str(post), [p for p in POSTPROCESSORS if p])}")
        post = ""
    return {"max_tokens": check.number(gen, "max_tokens", where),
            "temperature": check.number(gen, "temperature", where, integer=False),
            "stop": list(stop), "postprocess": post, "budget": check.number(gen, "budget", where)}


def resolve_file(name, files) -> str:
    """The path of input file `name`: `files` maps uploaded names to paths, or is the
    directory the plan's names are relative to."""
    if not (isinstance(name, str) and name):
        raise JobParamsError(f"must name an input file, got {shown(name)}")
    if isinstance(files, dict):
        if name not in files:
            raise JobParamsError(f"{name!r} was not uploaded (uploaded: {', '.join(sorted(files)) or 'none'}): "
                                 "upload it with the plan, under its name")
        return str(Path(files[name]).resolve())
    path = (Path(files) / name).resolve()
    if not path.is_file():
        raise JobParamsError(f"input file {name} does not exist next to the plan ({Path(files)})")
    return str(path)
