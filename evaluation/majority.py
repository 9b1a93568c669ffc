"""Strict majority label per unit (statistics.md, "Majority label")."""
import numpy as np

from evaluation.tabulate import tabulate, top_three


def majority_labels(units, values):
    """{unit: value chosen by strictly more judgments than any other value, else None}.

    Missing values (None/NaN) are ignored; a unit with only missing values is left out.
    """
    c = tabulate(units, np.arange(len(units)), values)
    v1, c1, _, c2, _ = top_three(c)
    labels = c.value_labels.tolist()
    present = c.m > 0
    return {
        unit: (labels[v] if first > second else None)
        for unit, v, first, second, ok in zip(
            c.unit_labels.tolist(), v1.tolist(), c1.tolist(), c2.tolist(), present.tolist()
        )
        if ok
    }
