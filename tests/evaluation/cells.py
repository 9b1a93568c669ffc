"""Test data shapes for the statistics: a units x coders matrix to long-format lists."""


def long_from_unit_rows(rows):
    """rows[unit][coder] (None = no rating) -> (units, coders, values), the long format the
    statistics take."""
    units, coders, values = [], [], []
    for unit, row in enumerate(rows):
        for coder, x in enumerate(row):
            if x is not None:
                units.append(unit)
                coders.append(coder)
                values.append(x)
    return units, coders, values
