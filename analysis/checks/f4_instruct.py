"""F4: Instruction tuning does not sharpen how gradients tell irrelevant from correct responses."""

from __future__ import annotations

from analysis.checks.check_chapters import READING
from analysis.findings import check_parts as cp
from analysis.findings import roles, simulated_samples
from analysis.findings.battery import DECIDING, MATH, Fixture
from analysis.findings.calibration import rule
from analysis.findings.rules import NOT_APPLICABLE, SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import Inputs, PairCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign

_MARGIN = SAME_MARGIN_PERCENT

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
    parts=cp.f4_parts,
    chapters=READING,
    calibrated_by=(rule.NOT_BETTER,),
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


BATTERY = Fixture(
    verdicts=DECIDING | {NOT_APPLICABLE},
    needs="an instruct model with its own base model",
    truth=lambda: _inputs(instruct=0.3, base=0.3),
    falsity=lambda: _inputs(instruct=0.9, base=0.0),
    missing=lambda: _inputs(instruct=0.3, base=0.3, declared=False),
)
