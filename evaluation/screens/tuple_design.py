"""Which systems a best-worst screen shows together (studies.md, "best_worst": `tuple_size`
3-6): tuples of k systems in which every system appears, and every pair of systems
co-occurs, as evenly as possible - a balanced incomplete block design (BIBD) where one is
found.

`design_tuples(N, k)`: b tuples. By default b is the smallest number a BIBD could have
(r = b k / N and lambda = b k (k - 1) / (N (N - 1)) both whole) when that is at most 4N,
else 2N (Kiritchenko & Mohammad 2016 use about 2N tuples). The design is searched from a
greedy start by local moves (one system of one tuple replaced by another), seeded:
the greedy start spreads the systems evenly (each next member: the least-used system, then
the one least often with the members so far), and moves that exchange two systems between
two tuples (so no system's count r_s changes) lower sum_pairs c_pair^2 (c_pair: tuples
holding both) by simulated annealing; restarts until every r_s and every c_pair are within
1 of each other (with whole r and lambda, that is a BIBD), else the most even design seen. Pure and deterministic for a
given (N, k, b, seed).
"""
import math

import numpy as np

from evaluation.screens.answer_checks import check_tuple_size

MOVES = 20_000  # local moves per restart
RESTARTS = 5


def default_tuple_count(n_systems: int, tuple_size: int) -> int:
    """b of `design_tuples` when none is given (module docstring).

    >>> default_tuple_count(7, 3), default_tuple_count(8, 4), default_tuple_count(8, 3)
    (7, 14, 16)
    """
    n, k = n_systems, tuple_size
    for_r = n // math.gcd(n, k)
    for_lambda = n * (n - 1) // math.gcd(n * (n - 1), k * (k - 1))
    b = math.lcm(for_r, for_lambda)
    return b if b <= 4 * n else 2 * n


def co_occurrence(tuples: list[tuple[int, ...]], n_systems: int) -> np.ndarray:
    """C[a, b] = tuples holding both a and b (a != b); C[a, a] = tuples holding a.

    >>> co_occurrence([(0, 1, 2), (0, 1, 3)], 4).tolist()
    [[2, 2, 1, 1], [2, 2, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1]]
    """
    c = np.zeros((n_systems, n_systems), dtype=np.int64)
    for t in tuples:
        idx = np.array(t)
        c[idx[:, None], idx[None, :]] += 1
    return c


def is_even(c: np.ndarray) -> bool:
    """Every system's count, and every pair's, within 1 of the others'."""
    iu = np.triu_indices(len(c), 1)
    r, pairs = np.diag(c), c[iu]
    return bool(r.max() - r.min() <= 1 and (not len(pairs) or pairs.max() - pairs.min() <= 1))


def _cost(c: np.ndarray) -> int:
    n = len(c)
    iu = np.triu_indices(n, 1)
    return int(n * n * (np.diag(c) ** 2).sum() + (c[iu] ** 2).sum())


def _search(n: int, k: int, b: int, rng: np.random.Generator) -> list[list[int]]:
    """One restart: greedy tuples (least-used systems, then least co-occurring), then local
    moves: an exchange of two systems between two tuples (keeps every r_s), taken when it
    lowers sum_pairs c_pair^2, or with probability exp(-increase / T) as T cools from 2
    to 0.05 (simulated annealing)."""
    c = [[0] * n for _ in range(n)]
    tuples: list[list[int]] = []
    for _ in range(b):
        t: list[int] = []
        for _ in range(k):
            free = [s for s in range(n) if s not in t]
            score = [(c[s][s], sum(c[s][u] for u in t), rng.random()) for s in free]
            t.append(free[min(range(len(free)), key=score.__getitem__)])
        for x in t:
            for u in t:
                c[x][u] += 1
        tuples.append(t)
    draws = rng.random((MOVES, 5))
    for step in range(MOVES):
        if step % 64 == 0 and is_even(np.array(c)):
            break
        u1, u2, u3, u4, u5 = draws[step]
        t1, t2 = tuples[int(u1 * b)], tuples[int(u2 * b)]
        only1 = [x for x in t1 if x not in t2]
        only2 = [y for y in t2 if y not in t1]
        if not only1:
            continue
        x, y = only1[int(u3 * len(only1))], only2[int(u4 * len(only2))]
        delta = _replace(c, t1, x, y) + _replace(c, t2, y, x)
        temperature = 2.0 * (0.025 ** (step / MOVES))
        if delta <= 0 or u5 < math.exp(-delta / temperature):
            t1[t1.index(x)], t2[t2.index(y)] = y, x
        else:
            _replace(c, t2, x, y)
            _replace(c, t1, y, x)
    return tuples


def _replace(c: list[list[int]], t: list[int], x: int, y: int) -> int:
    """Move the pair counts of tuple t from x to y (in c); returns the change in sum c^2 of
    its pairs (t itself is left as it is)."""
    delta = 0
    for u in t:
        if u != x and u != y:
            delta += 2 * (c[y][u] - c[x][u] + 1)
            c[x][u] -= 1
            c[u][x] -= 1
            c[y][u] += 1
            c[u][y] += 1
    c[x][x] -= 1
    c[y][y] += 1
    return delta


def design_tuples(n_systems: int, tuple_size: int, n_tuples: int | None = None,
                  seed: int = 0) -> list[tuple[int, ...]]:
    """b tuples of `tuple_size` distinct systems (codes 0..N-1, each tuple sorted) as even as
    found (module docstring); one tuple of all systems when N <= tuple_size.

    >>> design = design_tuples(7, 3)
    >>> len(design), sorted(set(co_occurrence(design, 7)[0, 1:].tolist()))  # the Fano plane
    (7, [1])
    """
    check_tuple_size(tuple_size)
    if n_systems < 2:
        raise ValueError(f"a best-worst design needs at least 2 systems, got {n_systems}")
    if n_systems <= tuple_size:
        return [tuple(range(n_systems))]
    b = default_tuple_count(n_systems, tuple_size) if n_tuples is None else n_tuples
    if b < 1:
        raise ValueError(f"n_tuples must be at least 1, got {b}")
    rng = np.random.default_rng(seed)
    best: list[list[int]] = []
    best_cost = math.inf
    for _ in range(RESTARTS):
        tuples = _search(n_systems, tuple_size, b, rng)
        c = co_occurrence([tuple(t) for t in tuples], n_systems)
        if _cost(c) < best_cost:
            best, best_cost = tuples, _cost(c)
        if is_even(c):
            break
    return [tuple(sorted(t)) for t in best]

