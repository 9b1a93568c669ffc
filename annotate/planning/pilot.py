"""Defaults of a design fitted from a pilot study (`"pilot": "<slug>"`): the systems'
Bradley-Terry strengths and the position bias, both read from the pilot's own report (its
ranking and its first-shown rate), never re-estimated here. Values the design file gives
itself win; `Design.fitted` says which values came from the pilot."""
import math

from annotate.models import Study
from annotate.reports.data import study_report

from .design_spec import Design, DesignInvalid


def apply_pilot(design: Design, given: set[str]) -> Design:
    study = Study.objects.filter(slug=design.pilot).first()
    if study is None:
        raise DesignInvalid([f"'pilot': no study with slug {design.pilot!r}"])
    if not study.judgments.exists():
        raise DesignInvalid([f"'pilot': study {design.pilot!r} has no judgments to fit a model from"])
    report, _ = study_report(study)
    if "systems" not in given:
        ranking = report.get("ranking")
        if not isinstance(ranking, dict) or not ranking:
            reason = report.get("ranking_detail", {}).get("reason") or report.get("reason") or "no ranking"
            raise DesignInvalid([f"'pilot': study {design.pilot!r} gives no system strengths ({reason})"])
        design.systems = {system: entry["strength"] for system, entry in ranking.items()}
        design.fitted.append("systems")
    rate = (report.get("position_bias") or {}).get("first_shown_rate")
    if "position_bias" not in given and rate is not None and 0 < rate < 1:
        design.position_bias = math.log(rate / (1 - rate))
        design.fitted.append("position_bias")
    return design
