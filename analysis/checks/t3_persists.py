"""T3: Fast thinking's larger gradient persists through training."""

from __future__ import annotations

from analysis.checks.training_declaration import training_check
from analysis.findings import roles, training_checks
from analysis.findings.calibration import rule
from analysis.findings.scopes import Words

CHECK = training_check(
    "T3",
    parts=training_checks.t3,
    rule=rule.PROBE_GAP,
    says=((roles.GAP_CHANGE, "persists"),),
    words=Words(
        holds="F1's gap persists through training",
        fails="F1's gap shrinks by more than the margin",
        unresolved="these runs do not decide whether F1's gap persists",
    ),
    plain="Fast thinking's larger gradient persists through training",
    claim=(
        "The None / Detailed gap in probe nuclear norms (F1) persists after K steps of training on each arm: "
        "its change since step 0 decides (the gap shrinks by less than 10%), where the gap is established at step 0"
    ),
)
