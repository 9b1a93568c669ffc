"""One design, read and run whole: what `manage.py design`, the API's design runs and the
study page's Plan panel share (the same JSON for the same design and seed)."""
from collections.abc import Callable

from .design_spec import Design, parse_design
from .pilot import apply_pilot
from .power import power, solve_design
from .stopping import stopping_error


def prepared(raw) -> Design:
    """The checked design, its model fitted from the pilot study when one is named
    (DesignInvalid naming every problem otherwise)."""
    design = parse_design(raw)
    if design.pilot:
        design = apply_pilot(design, set(raw))
        parse_design({**raw, "systems": design.systems, "pilot": None})  # the fitted design is checked too
    return design


def total_studies(design: Design) -> int:
    """Simulated studies a run makes (the progress's total; a solve's search is not counted)."""
    return design.simulations * (3 if design.stopping else 1)


def run_design(design: Design, workers: int | None = None, solve: str | None = None,
               progress: Callable[[int], None] | None = None) -> dict:
    """{"targets": [...], "stopping"?, "solved"?, "fitted_from_pilot"?} (interfaces.md)."""
    result: dict = {"targets": power(design, workers, progress)}
    if solve:
        result["solved"] = solve_design(design, solve, workers)
    if design.stopping:
        result["stopping"] = stopping_error(design, workers, progress)
    if design.fitted:
        result["fitted_from_pilot"] = {"pilot": design.pilot, "parameters": design.fitted,
                                       "systems": design.systems,
                                       **({"noise_sd": design.noise_sd, "scale": list(design.scale)} if design.scalar
                                          else {"position_bias": design.position_bias})}
    return result
