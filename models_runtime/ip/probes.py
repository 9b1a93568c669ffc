"""The implicit-personalization probe file: JSONL, one question a line.

    {"id": "football-colour", "question": "What colour is a football?",
     "cues": {"us": "...What color is a football?...", "uk": "...What colour is a football?..."},
     "expected": {"us": ["brown"], "uk": ["black and white", "white"]}}
    {"id": "essay-uniforms", "question": "...", "cues": {"sae": "...", "aae": "...", "esl": "..."},
     "rule": "metric", "metric": "essay_quality"}

- `cues`: at least two cue names (letters, digits, `_.-`) mapped to the prompts sent to
  the model; the prompts differ only in the user-background cue.
- Scoring rule: `label` (the default when `expected` is given): `expected` holds, for
  every cue, its expected answer (a string or a list of alternatives) matched as a whole
  word or phrase, case-insensitive (evaluation/personalization/ip_effect.py). `metric`: `metric` names a
  registered metric or judge that scores each response; the metric sees the neutral
  `question` as its input and the optional `reference` text.
- `max_tokens` (optional): this question's answer budget, instead of the plan's
  `generation.max_tokens` (a one-word answer needs far fewer tokens than an essay); the
  same for every cue of the question.
A file is refused whole: every problem is listed as `line N: reason` (the job's check,
`probe_metrics`, reads a line at a time and lists the first 20).
"""
import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluation.personalization.ip_effect import MIXED, OTHER
from humeval.jsonl import error_reason, json_lines

SHIPPED = Path(__file__).with_name("ip_probes.jsonl")  # the project's own probe set
KEYS = ("id", "question", "cues", "expected", "rule", "metric", "reference", "max_tokens")
MAX_TOKENS = 4096
RULES = ("label", "metric")
CUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
MAX_ID = 100


class ProbeFileError(ValueError):
    """A probe file refused whole; `errors` lists every `line N: reason`."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class Probe:
    id: str
    question: str
    cues: dict  # cue name -> prompt, in file order
    expected: dict | None  # label rule: cue name -> tuple of accepted answers
    rule: str
    metric: str  # metric rule: the metric's name; "" for label
    reference: str
    line: int
    max_tokens: int | None = None  # None: the plan's generation.max_tokens

    @property
    def score(self) -> str:
        """What r is: `label`, or `metric:<name>` (effects of different scores never mix)."""
        return "label" if self.rule == "label" else f"metric:{self.metric}"


def _answers(value) -> tuple[str, ...] | None:
    """A cue's expected answers (a string or a non-empty list of strings), None if bad."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v.strip() for v in values):
        return None
    return tuple(v.strip() for v in values)


def _cue_errors(cues) -> list[str]:
    if not isinstance(cues, dict) or len(cues) < 2:
        return ["'cues' must map at least two cue names to their prompts"]
    errors = []
    for name, prompt in cues.items():
        if not CUE_NAME.fullmatch(name) or name in (OTHER, MIXED):
            errors.append(f"cue name {name!r} must be letters, digits, '_', '.' or '-' (at most 40), "
                          f"not {OTHER!r} or {MIXED!r}")
        elif not isinstance(prompt, str) or not prompt.strip():
            errors.append(f"cue {name!r} has an empty prompt")
    prompts = [p.strip() for p in cues.values() if isinstance(p, str)]
    if not errors and len(set(prompts)) < len(prompts):
        errors.append("two cues have the same prompt: the probe would change nothing")
    return errors


def _expected_errors(expected, cues) -> list[str]:
    if not isinstance(expected, dict):
        return ["'expected' must map every cue to its expected answer"]
    errors = [f"expected has no answer for cue {cue!r}" for cue in cues if cue not in expected]
    errors += [f"expected names cue {cue!r}, which is not in cues" for cue in expected if cue not in cues]
    errors += [f"the expected answer of cue {cue!r} must be a non-empty string or list of strings"
               for cue, value in expected.items() if cue in cues and _answers(value) is None]
    return errors


def _rule(obj) -> tuple[str, list[str]]:
    rule = obj.get("rule", "label" if "expected" in obj or "metric" not in obj else "metric")
    if rule not in RULES:
        return "", [f"'rule' must be label or metric, not {rule!r}"]
    if rule == "label" and "metric" in obj:
        return rule, ["'metric' belongs to rule metric; rule label scores by 'expected'"]
    if rule == "metric" and "expected" in obj:
        return rule, ["'expected' belongs to rule label; rule metric scores with 'metric'"]
    return rule, []


def line_errors(obj, metric_error: Callable[[str], str | None]) -> list[str]:
    """Every problem of one parsed line (without its line number)."""
    if not isinstance(obj, dict):
        return ["expected a JSON object {id, question, cues, expected | metric}"]
    errors = []
    for key in obj:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            errors.append(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    probe_id = obj.get("id")
    if not isinstance(probe_id, str) or not probe_id.strip() or len(probe_id) > MAX_ID:
        errors.append(f"'id' must be a non-empty string of at most {MAX_ID} characters")
    question = obj.get("question")
    if question is None or (isinstance(question, str) and not question.strip()):
        errors.append("empty question")
    elif not isinstance(question, str):
        errors.append("'question' must be a string")
    cues = obj.get("cues")
    errors += _cue_errors(cues)
    rule, rule_errors = _rule(obj)
    errors += rule_errors
    if rule == "label" and not rule_errors and isinstance(cues, dict):
        errors += _expected_errors(obj.get("expected"), cues) if "expected" in obj else [
            "no scoring rule: give 'expected' (rule label) or 'metric' (rule metric)"]
    if rule == "metric" and not rule_errors:
        name = obj.get("metric")
        problem = metric_error(name) if isinstance(name, str) and name else "rule metric needs 'metric' (a name)"
        if problem:
            errors.append(problem)
    if "reference" in obj and not isinstance(obj["reference"], str):
        errors.append("'reference' must be a string")
    budget = obj.get("max_tokens")
    if "max_tokens" in obj and not (isinstance(budget, int) and not isinstance(budget, bool)
                                    and 1 <= budget <= MAX_TOKENS):
        errors.append(f"'max_tokens' must be an integer from 1 to {MAX_TOKENS}")
    return errors


def iter_probes(lines, metric_error: Callable[[str], str | None]) -> Iterator[tuple[int, Probe | None, list[str]]]:
    """(line number, its Probe or None, its problems) for each non-blank line, one at a
    time (memory: a line and the ids seen)."""
    first_line: dict[str, int] = {}
    for number, obj, bad_json in json_lines(lines):
        if bad_json is not None:
            yield number, None, [error_reason(bad_json)]
            continue
        problems = line_errors(obj, metric_error)
        probe_id = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(probe_id, str) and probe_id in first_line:
            problems.append(f"duplicate id {probe_id!r} (first on line {first_line[probe_id]})")
        elif isinstance(probe_id, str):
            first_line[probe_id] = number
        if problems:
            yield number, None, problems
            continue
        rule, _ = _rule(obj)
        yield number, Probe(
            id=obj["id"], question=obj["question"].strip(), cues={k: v.strip() for k, v in obj["cues"].items()},
            expected={cue: _answers(obj["expected"][cue]) for cue in obj["cues"]} if rule == "label" else None,
            rule=rule, metric=obj.get("metric", "") if rule == "metric" else "", reference=obj.get("reference", ""),
            line=number, max_tokens=obj.get("max_tokens")), []


def parse_probes(lines, metric_error: Callable[[str], str | None]) -> list[Probe]:
    """The probes of a file's lines; ProbeFileError listing every bad line."""
    probes: list[Probe] = []
    errors: list[str] = []
    for number, probe, problems in iter_probes(lines, metric_error):
        errors += [f"line {number}: {problem}" for problem in problems]
        if probe is not None:
            probes.append(probe)
    if not errors and not probes:
        errors.append("no probes: the file has no lines")
    if errors:
        raise ProbeFileError(errors)
    return probes


def probe_metrics(path, metric_error: Callable[[str], str | None], max_errors: int = 20) -> set[str]:
    """Check the probe file at `path` a line at a time, keeping no probe (an upload may be
    large: issue 25). -> the metrics its `metric` probes name; ProbeFileError with the
    first `max_errors` problems (OSError when it cannot be read)."""
    metrics: set[str] = set()
    errors: list[str] = []
    total = good = 0
    with open(path, encoding="utf-8") as handle:
        for number, probe, problems in iter_probes(handle, metric_error):
            total += len(problems)
            errors += [f"line {number}: {problem}" for problem in problems[:max_errors - len(errors)]]
            if probe is not None:
                good += 1
                metrics.update([probe.metric] if probe.rule == "metric" else [])
    if not total and not good:
        errors.append("no probes: the file has no lines")
    if total > len(errors):
        errors.append(f"(and {total - len(errors)} more)")
    if errors:
        raise ProbeFileError(errors)
    return metrics


def registered_metric_error(name: str) -> str | None:
    """None when `name` is a registered metric or judge, else why not."""
    from models_runtime.metrics.registry import UnknownMetric, get_metric

    try:
        get_metric(name)
    except UnknownMetric as exc:
        return str(exc)
    return None


def read_probes(path) -> list[Probe]:
    """The probes of the file at `path` (ProbeFileError; OSError when it cannot be read)."""
    with open(path, encoding="utf-8") as handle:
        return parse_probes(handle, registered_metric_error)


def cue_order(probes: list[Probe]) -> dict[str, int]:
    """Cue name -> rank by first appearance in the file: pairs are oriented (b0, b1) in
    this order, whatever order a line lists its cues in."""
    order: dict[str, int] = {}
    for probe in probes:
        for cue in probe.cues:
            order.setdefault(cue, len(order))
    return order


def cue_pairs(probe: Probe, order: dict[str, int]) -> list[tuple[str, str]]:
    """Every (b0, b1) pair of the probe's cues, b0 first in the file's cue order."""
    cues = sorted(probe.cues, key=order.__getitem__)
    return [(cues[i], cues[j]) for i in range(len(cues)) for j in range(i + 1, len(cues))]
