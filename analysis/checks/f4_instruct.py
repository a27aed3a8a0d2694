"""F4: Instruction tuning does not sharpen how gradients tell irrelevant from correct responses."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from analysis.checks.check_chapters import READING
from analysis.findings import roles, simulated_samples
from analysis.findings.battery import DECIDING, MATH, Fixture
from analysis.findings.bootstrap import CurveDraws, combine
from analysis.findings.calibration import rule
from analysis.findings.quantities import (
    log_rd,
    log_rd_mean_square,
    mean_rd_between,
    root_mean_square,
    size_excess,
)
from analysis.findings.rules import (
    NOT_APPLICABLE,
    SAME_MARGIN,
    SAME_MARGIN_PERCENT,
    CheckId,
    Part,
    Unit,
    beside,
)
from analysis.findings.scopes import Inputs, PairCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign

_MARGIN = SAME_MARGIN_PERCENT

F4_SIZE = f"instruct size^2 - (base size + {math.exp(SAME_MARGIN) - 1:.0%})^2 of Detailed irrelevant / correct"


def f4_parts(instruct: CurveDraws, base: CurveDraws, dataset: str) -> list[Part] | None:
    """F4 on the size of the separation: the root-mean-square over layers of the per-layer Detailed
    irrelevant/correct log ratio of the instruct model exceeds its base model's by less than the
    margin (``size_excess`` below 0; paired by instruction); the sizes' difference, the signed
    ratios' difference and the paper's quantity shown beside."""
    square_a, square_b = (log_rd_mean_square(cd, dataset, "detailed") for cd in (instruct, base))
    a, b = log_rd(instruct, dataset, "detailed"), log_rd(base, dataset, "detailed")
    if a is None or b is None or square_a is None or square_b is None:
        return None
    sizes = combine(np.subtract, root_mean_square(square_a), root_mean_square(square_b))
    signed = Part(
        name="instruct / base of Detailed irrelevant / correct",
        estimate=combine(np.subtract, a, b),
        side="below",
        bound=SAME_MARGIN,
        unit=Unit.RATIO,
        role=roles.SIGNED_RATIO,
        decides=True,
    )
    return [
        Part(
            name=F4_SIZE,
            estimate=size_excess(square_a, square_b, SAME_MARGIN),
            side="below",
            bound=0.0,
            role=roles.SIZE_EXCESS,
            decides=True,
            equivalence=True,  # "no better": over a family, in every dataset
        ),
        Part(
            name="instruct / base of Detailed size",
            estimate=sizes,
            side="below",
            bound=SAME_MARGIN,
            unit=Unit.RATIO,
            role=roles.SIZE_RATIO,
            decides=False,
            equivalence=True,
        ),
        replace(signed, decides=False),
        beside(signed, mean_rd_between(instruct, base, dataset)),
    ]


CHECK = PairCheck(
    id=CheckId("F4"),
    paper=True,
    says=((roles.SIZE_EXCESS, "instruct no better than base"),),
    words=Words(
        holds="the instruct model separates correct from irrelevant no better than its base",
        fails="the instruct model separates them better than its base",
        unresolved="these instructions do not decide which model separates them better",
    ),
    plain="Instruction tuning does not sharpen how gradients tell irrelevant from correct responses",
    headline=roles.SIZE_RATIO,
    claim=(
        "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
        "model: the size of its separation (root-mean-square over layers of the per-layer log ratio of geometric "
        f"means of nuclear norms, irrelevant over correct, whatever its direction) exceeds the base's by less than "
        f"{_MARGIN} (the signed ratios and the paper's mean nuclear norm shown beside)"
    ),
    parts=f4_parts,
    chapters=READING,
    calibrated_by=(rule.NOT_BETTER,),
    battery=Fixture(
        verdicts=DECIDING | {NOT_APPLICABLE},
        needs="an instruct model with its own base model",
        truth=lambda: _inputs(instruct=0.3, base=0.3),
        falsity=lambda: _inputs(instruct=0.9, base=0.0),
        missing=lambda: _inputs(instruct=0.3, base=0.3, declared=False),
    ),
)

_INSTRUCT, _BASE = "m-instruct", "m-base"


def _inputs(*, instruct: float, base: float, declared: bool = True) -> Inputs:
    """An instruct model and its base whose irrelevant Detailed-CoT responses lie ``instruct`` and
    ``base`` above their correct ones in log level (declared a pair unless ``declared`` is False)."""

    def separating(size: float) -> dict[str, Condition]:
        return {
            f"{d}/detailed/{r}": Condition(curve=size if r == "irrelevant" else 0.0)
            for d in MATH
            for r in ("correct", "irrelevant")
        }

    models = {_INSTRUCT: separating(instruct), _BASE: separating(base)}
    draws = simulated_samples.draws(models, design=SampleDesign(sample_sd=0.05))
    return Inputs(draws, pairs={_INSTRUCT: _BASE}, declared={_INSTRUCT: _BASE} if declared else None)
