"""F2: The faster the thinking, the more the gradient varies from layer to layer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from analysis.checks.check_chapters import READING
from analysis.core import vocabulary
from analysis.findings import roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.bootstrap import combine
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import (
    log_mad_ratio,
    log_variance_change,
    mean_roughness_difference,
    roughness,
)
from analysis.findings.rules import CheckId, Note, NoteKind, Part, Unit, above_zero
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition, wiggle

# F2's parts on the paper's scale: the mean curve's roughness per pair of settings, and whether
# None's log-scale spread changes across layers (then None vs Simplified is decided on the former)
MEAN_CURVE_ROUGHNESS = "mean curve's roughness (paper's scale)"
LOG_SPREAD_CHANGE = "None log-scale variance, late - early layers"


def _short(setting: str) -> str:
    return vocabulary.setting_label(setting).split()[0]


def f2_parts(context: DatasetContext) -> list[Part] | None:
    """F2: for each projection and adjacent pair of settings, the noise-corrected roughness of the
    log curve (``corrected_roughness``) of the faster setting minus that of the slower > 0; the
    paper's MAD ratio of the mean curves, the mean curve's roughness and None's log-scale spread
    across layers shown beside it (``spread_decides`` may make the mean curve's roughness decide)."""
    cd, dataset = context.curves, context.dataset
    settings = [s for s in vocabulary.COT_SETTINGS if cd.has(cd.condition_key(dataset, s))]
    if len(settings) < 2:
        return None
    parts = []
    for fast, slow in zip(settings, settings[1:]):
        group = f"roughness {_short(fast)} - {_short(slow)}"
        none_pair = (fast, slow) == ("none", "simplified")  # the pair ``mean_curve_decides`` may decide otherwise
        for proj in vocabulary.PROJECTIONS:
            a, b = roughness(cd, dataset, fast, proj), roughness(cd, dataset, slow, proj)
            difference_ = None if a is None or b is None else combine(np.subtract, a, b)
            role = roles.NONE_ROUGHNESS if none_pair else roles.ROUGHNESS
            facet = (fast, slow, proj)
            parts.append(above_zero(proj.upper(), difference_, role=role, facet=facet, group=group, decides=True))
        mean_role = roles.NONE_MEAN_CURVE_ROUGHNESS if none_pair else roles.MEAN_CURVE_ROUGHNESS
        shown = (
            (
                "paper's MAD ratio (Q, K, V, O mean)",
                log_mad_ratio(cd, dataset, fast, slow),
                Unit.RATIO,
                roles.MAD_RATIO,
            ),
            (MEAN_CURVE_ROUGHNESS, mean_roughness_difference(cd, dataset, fast, slow), Unit.DIFFERENCE, mean_role),
        )
        parts += [
            above_zero(name, value, unit=unit, role=role, facet=(fast, slow), group=group, decides=False)
            for name, value, unit, role in shown
        ]
    if settings[0] == "none":
        spread = log_variance_change(cd, dataset, "none")
        parts.append(
            Part(
                name=LOG_SPREAD_CHANGE,
                estimate=spread,
                side="within",
                bound=0.0,
                role=roles.LOG_SPREAD_CHANGE,
                decides=False,
            )
        )
    return parts


def spread_decides(parts: Sequence[Part]) -> tuple[list[Part], Note | None]:
    """F2's parts and note where None's log-scale spread changes across layers (the interval of
    ``roles.LOG_SPREAD_CHANGE`` away from 0): the mean log curve's roughness is not the paper's mean
    curve's then, so None vs Simplified is decided on the mean curve's roughness
    (``mean_curve_decides``); elsewhere the parts unchanged and no note."""
    spread = [p for p in parts if p.role is roles.LOG_SPREAD_CHANGE and p.estimate is not None]
    if not (spread and (spread[0].interval()[0] > 0 or spread[0].interval()[1] < 0)):
        return list(parts), None
    return mean_curve_decides(parts), Note(
        NoteKind.DECIDED_OTHERWISE,
        "None's log-scale spread changes across layers, so the mean log curve's roughness is not the "
        "paper's mean curve's: None vs Simplified is decided on the mean curve's roughness",
    )


def mean_curve_decides(parts: Sequence[Part]) -> list[Part]:
    """F2's None vs Simplified parts where None's log-scale spread changes across layers: the mean
    curve's roughness (relative to its level) decides in place of the log curve's per projection.
    Its interval misses below the truth (a false "rougher") no more than 2.5% in the scenarios of
    ``scenarios`` (tests/test_calibration.py)."""
    out = []
    for p in parts:
        if p.role is roles.NONE_ROUGHNESS and p.decides:
            p = replace(p, decides=False)
        elif p.role is roles.NONE_MEAN_CURVE_ROUGHNESS:
            p = replace(p, decides=True)
        out.append(p)
    return out


CHECK = PerModelCheck(
    id=CheckId("F2"),
    paper=True,
    says=(
        (roles.NONE_ROUGHNESS, "None rougher than Simplified"),
        (roles.NONE_MEAN_CURVE_ROUGHNESS, "None's mean curve rougher than Simplified's"),
        (roles.ROUGHNESS, "Simplified rougher than Detailed"),
    ),
    words=Words(
        holds="the curves vary more from layer to layer the faster the thinking",
        fails="a faster setting's curve is smoother than a slower one's",
        unresolved="these instructions do not decide how the roughness orders",
    ),
    plain="The faster the thinking, the more the gradient varies from layer to layer",
    headline=roles.MAD_RATIO,
    claim=(
        "Curves vary more from layer to layer the faster the thinking (None > Simplified > Detailed CoT), for "
        "each of Q, K, V and O (roughness of the mean log curve; None vs Simplified on the mean curve's roughness "
        "where None's log-scale spread changes across layers)"
    ),
    parts=f2_parts,
    chapters=READING,
    calibrated_by=(rule.ROUGHNESS, rule.PAPER_MAD),
    adjust=spread_decides,
    battery=Fixture(
        verdicts=DECIDING,
        needs="two of None, Simplified and Detailed CoT",
        truth=lambda: _inputs(0.6, 0.3, 0.05),
        falsity=lambda: _inputs(0.05, 0.3, 0.6),
        missing=lambda: model_inputs({"detailed/correct": Condition()}),
    ),
)


def _inputs(none: float, simplified: float, detailed: float) -> Inputs:
    """Log curves stepping from layer to layer by about ``none``, ``simplified`` and ``detailed``."""
    sizes = {"none": none, "simplified": simplified, "detailed": detailed}
    return model_inputs({f"{s}/correct": Condition(curve=wiggle(0.0, size)) for s, size in sizes.items()})
