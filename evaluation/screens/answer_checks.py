"""Checks of the answers and header keys of the several-outputs kinds and of test-retest
repeats (studies.md, "Several outputs on one screen"), as pure functions: every place
answers enter (page, API, import) calls the same one, so all refuse with the same message.
Each raises InputError (a ValueError) saying what is wrong; a caller adds where (row, line).
"""
from collections.abc import Collection, Mapping, Sequence
from typing import Any

TUPLE_SIZES = range(3, 7)  # `tuple_size` 3-6
MAX_RETEST_SHARE = 0.5
DEFAULT_RETEST_AFTER = 5


class InputError(ValueError):
    """An answer or header value that is refused; str() is the message to show."""


def check_best_worst(best: Any, worst: Any, shown: Collection[Any]) -> tuple[Any, Any]:
    """(best, worst) when both are shown outputs and differ.

    >>> check_best_worst("a", "c", ["a", "b", "c"])
    ('a', 'c')
    >>> check_best_worst("b", "b", ["a", "b", "c"])
    Traceback (most recent call last):
    ...
    evaluation.screens.answer_checks.InputError: best and worst must be two different outputs (both are 'b')
    """
    for name, value in (("best", best), ("worst", worst)):
        if value is None or value == "":
            raise InputError(f"{name} is missing: pick one of the shown outputs")
        if value not in shown:
            raise InputError(f"{name} {value!r} is not one of the shown outputs")
    if best == worst:
        raise InputError(f"best and worst must be two different outputs (both are {best!r})")
    return best, worst


def check_order(order: Any, candidates: Collection[Any], ties: bool = False) -> list[list[Any]]:
    """The order as groups, best first (a group of two or more is a tie), when it ranks
    every candidate exactly once. Without ties: a flat list of candidates; with ties: a
    list whose entries are candidates or lists of candidates.

    >>> check_order(["b", "a", "c"], ["a", "b", "c"])
    [['b'], ['a'], ['c']]
    >>> check_order([["b", "a"], "c"], ["a", "b", "c"], ties=True)
    [['b', 'a'], ['c']]
    >>> check_order(["b", "a"], ["a", "b", "c"])
    Traceback (most recent call last):
    ...
    evaluation.screens.answer_checks.InputError: the order is partial: it leaves out 'c' (rank every output once)
    """
    if isinstance(order, (str, bytes)) or not isinstance(order, Sequence) or not order:
        raise InputError("the order must be a non-empty list of outputs, best first")
    groups: list[list[Any]] = []
    for entry in order:
        if isinstance(entry, Sequence) and not isinstance(entry, (str, bytes)):
            if not ties:
                raise InputError("ties are not allowed in this study: list each output on its own")
            if not entry:
                raise InputError("the order holds an empty group")
            groups.append(list(entry))
        else:
            groups.append([entry])
    placed = [c for g in groups for c in g]
    unknown = [c for c in placed if c not in candidates]
    if unknown:
        raise InputError(f"the order names {unknown[0]!r}, which is not one of the shown outputs")
    seen: set[Any] = set()
    for c in placed:
        if c in seen:
            raise InputError(f"the order repeats {c!r} (rank every output once)")
        seen.add(c)
    missing = [c for c in candidates if c not in seen]
    if missing:
        raise InputError("the order is partial: it leaves out " + ", ".join(repr(c) for c in missing)
                         + " (rank every output once)")
    return groups


def check_tuple_size(value: Any) -> int:
    """The header's `tuple_size` when it is a whole number from 3 to 6.

    >>> check_tuple_size(4)
    4
    >>> check_tuple_size(7)
    Traceback (most recent call last):
    ...
    evaluation.screens.answer_checks.InputError: tuple_size must be a whole number from 3 to 6, got 7
    """
    if isinstance(value, bool) or not isinstance(value, int) or value not in TUPLE_SIZES:
        raise InputError(f"tuple_size must be a whole number from {TUPLE_SIZES[0]} to {TUPLE_SIZES[-1]}, "
                         f"got {value!r}")
    return value


def check_retest(value: Any) -> dict[str, Any]:
    """The header's `retest` as {"share", "after"} when share is above 0 and at most 0.5 and
    `after` (default 5) is a whole number >= 0; other keys are refused.

    >>> check_retest({"share": 0.1})
    {'share': 0.1, 'after': 5}
    >>> check_retest({"share": 0.6, "after": 5})
    Traceback (most recent call last):
    ...
    evaluation.screens.answer_checks.InputError: retest.share must be above 0 and at most 0.5, got 0.6
    """
    if not isinstance(value, Mapping):
        raise InputError('retest must be an object such as {"share": 0.1, "after": 5}')
    extra = sorted(set(value) - {"share", "after"})
    if extra:
        raise InputError(f"retest has unknown key(s) {', '.join(map(repr, extra))} (known: 'share', 'after')")
    share = value.get("share")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= MAX_RETEST_SHARE:
        raise InputError(f"retest.share must be above 0 and at most {MAX_RETEST_SHARE}, got {share!r}")
    after = value.get("after", DEFAULT_RETEST_AFTER)
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise InputError(f"retest.after must be a whole number of items, 0 or more, got {after!r}")
    return {"share": float(share), "after": after}


# A full order as stored (Judgment.value, the judgments CSV, gold): ids best first, RANK_SEP
# between ranks and TIE_SEP inside a tied rank (interfaces.md: `a>b=c>d`).
RANK_SEP, TIE_SEP = ">", "="


def order_text(groups: Sequence[Sequence[Any]]) -> str:
    """Ranks (best first; a rank of two or more is a tie) as the stored text.

    >>> order_text([["a"], ["b", "c"], ["d"]])
    'a>b=c>d'
    """
    return RANK_SEP.join(TIE_SEP.join(str(c) for c in group) for group in groups)


def order_groups(text: str) -> list[list[str]]:
    """A stored order's ranks, best first (ids stripped of surrounding spaces).

    >>> order_groups("a>b=c>d")
    [['a'], ['b', 'c'], ['d']]
    """
    return [[c.strip() for c in rank.split(TIE_SEP)] for rank in str(text).split(RANK_SEP)]


def order_answer(raw: Any, candidates: Collection[Any], ties: bool = False) -> str:
    """The stored text of a full order given as text (`a>b=c>d`) or as a list (ties: lists
    inside it), when it ranks every candidate once (`check_order`); InputError else.

    >>> order_answer(" b > a > c ", ["a", "b", "c"])
    'b>a>c'
    >>> order_answer([["b", "a"], "c"], ["a", "b", "c"], ties=True)
    'b=a>c'
    >>> order_answer("b=a>c", ["a", "b", "c"])
    Traceback (most recent call last):
    ...
    evaluation.screens.answer_checks.InputError: ties are not allowed in this study: list each output on its own
    """
    if isinstance(raw, str):
        groups: list[Any] = [g if len(g) > 1 else g[0] for g in order_groups(raw)] if raw.strip() else []
    else:
        groups = raw
    return order_text(check_order(groups, candidates, ties))
