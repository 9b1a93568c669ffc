"""Defaults of a design fitted from a pilot study (`"pilot": "<slug>"`). Values the design
file gives itself win; `Design.fitted` says which values came from the pilot.

Pairwise kinds: the systems' Bradley-Terry strengths and the position bias, both read from
the pilot's own report (its strengths and its first-shown rate), never re-estimated here.
Scalar kinds: each system's mean score over its (item, annotator) ratings and `noise_sd` =
the square root of the report's reviewer variance (the mean within-item variance of the
ratings: annotators' tastes and noise together), from the rows the report counts
(fetch_report_input: flagged annotators and gold items left out; the kind's report module's
human_scores); the study's scale. The report has no per-system mean, so that one mean is
taken here, as the report takes its overall mean.
"""
import math

import numpy as np

from annotate.models import Study
from annotate.reports.data import fetch_report_input, study_report
from evaluation.report.inputs import Judgments
from evaluation.report.kinds import REPORT_MODULES
from evaluation.vocabulary import RANKED

from .design_spec import Design, DesignInvalid, scalar_kinds


def apply_pilot(design: Design, given: set[str]) -> Design:
    study = Study.objects.filter(slug=design.pilot).first()
    if study is None:
        raise DesignInvalid([f"'pilot': no study with slug {design.pilot!r}"])
    if not study.judgments.exists():
        raise DesignInvalid([f"'pilot': study {design.pilot!r} has no judgments to fit a model from"])
    if (study.kind in scalar_kinds()) != design.scalar:
        raise DesignInvalid([f"'pilot': study {design.pilot!r} is a {study.kind} study, which cannot be a pilot "
                             f"of a {design.kind} design"])
    return _fit_scalar(design, given, study) if design.scalar else _fit_pairwise(design, given, study)


def _fit_pairwise(design: Design, given: set[str], study: Study) -> Design:
    report, _ = study_report(study)
    if "systems" not in given:
        strengths = report.get(RANKED)
        if not isinstance(strengths, dict) or not strengths:
            reason = report.get("ranking_detail", {}).get("reason") or report.get("reason") or "no strengths"
            raise DesignInvalid([f"'pilot': study {design.pilot!r} gives no system strengths ({reason})"])
        design.systems = {system: entry["strength"] for system, entry in strengths.items()}
        design.fitted.append("systems")
    rate = (report.get("position_bias") or {}).get("first_shown_rate")
    if "position_bias" not in given and rate is not None and 0 < rate < 1:
        design.position_bias = math.log(rate / (1 - rate))
        design.fitted.append("position_bias")
    return design


def _fit_scalar(design: Design, given: set[str], study: Study) -> Design:
    module = REPORT_MODULES[study.kind]
    inp = fetch_report_input(study)
    item, _, score = module.human_scores(inp, Judgments.of(inp, inp.counted()))
    if not len(score):
        raise DesignInvalid([f"'pilot': study {design.pilot!r} has no scores to fit a model from"])
    system = inp.candidates[item, 0]
    if "systems" not in given:
        design.systems = {str(s): float(score[system == s].mean()) for s in sorted(set(system.tolist()))}
        design.fitted.append("systems")
    variance = module.reviewer_variance(item, score)["value"]
    if "noise_sd" not in given and variance is not None:
        design.noise_sd = float(np.sqrt(variance))
        design.fitted.append("noise_sd")
    if "scale" not in given:
        design.scale = tuple(int(v) for v in inp.config["scale"])
        design.fitted.append("scale")
    return design
