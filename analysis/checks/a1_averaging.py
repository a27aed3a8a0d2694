"""A1: In the Frobenius norm, fast thinking's larger gradient is more than averaging over fewer tokens."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import averaging, roles
from analysis.findings.battery import NotInBattery
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PerModelCheck, Words

CHECK = PerModelCheck(
    id=CheckId("A1"),
    lead=1,
    says=((roles.BEYOND_AVERAGING, "more than averaging predicts"),),
    words=Words(
        holds="more than averaging over more tokens predicts",
        fails="smaller than averaging over more tokens predicts: None CoT's token gradients are smaller or less aligned than Detailed CoT's",
        unresolved="not told apart from what averaging predicts",
    ),
    plain="In the Frobenius norm, fast thinking's larger gradient is more than averaging over fewer tokens",
    headline=roles.BEYOND_AVERAGING,
    beside=(roles.NUCLEAR_BEYOND_AVERAGING, "in F1's nuclear norm"),
    claim=(
        "F1 beyond averaging: None CoT's gap over Detailed CoT in mean log Frobenius norm exceeds what averaging "
        "over more response tokens alone predicts (1/2 log of R_Detailed / R_None): None CoT's sqrt(R)-scaled "
        "Frobenius norm, its token size and alignment together, is larger (geometric mean over instructions)"
    ),
    parts=averaging.a1_parts,
    chapters=GAP,
    calibrated_by=(rule.AVERAGING,),
    reads=averaging.READS,
    unknown=averaging.a1_unknown,
)

BATTERY = NotInBattery("retired by the split of F1's gap into its steps (its own issue): no new fixture")
