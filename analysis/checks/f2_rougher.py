"""F2: The faster the thinking, the more the gradient varies from layer to layer."""

from __future__ import annotations

from analysis.checks.check_chapters import READING
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition, wiggle

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
    parts=cp.f2_parts,
    chapters=READING,
    calibrated_by=(rule.ROUGHNESS, rule.PAPER_MAD),
    adjust=cp.spread_decides,
)


def _inputs(none: float, simplified: float, detailed: float) -> Inputs:
    """Log curves stepping from layer to layer by about ``none``, ``simplified`` and ``detailed``."""
    sizes = {"none": none, "simplified": simplified, "detailed": detailed}
    return model_inputs({f"{s}/correct": Condition(curve=wiggle(0.0, size)) for s, size in sizes.items()})


BATTERY = Fixture(
    verdicts=DECIDING,
    needs="two of None, Simplified and Detailed CoT",
    truth=lambda: _inputs(0.6, 0.3, 0.05),
    falsity=lambda: _inputs(0.05, 0.3, 0.6),
    missing=lambda: model_inputs({"detailed/correct": Condition()}),
)
