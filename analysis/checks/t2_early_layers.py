"""T2: Training on fast thinking changes the early layers more than training on slow thinking."""

from __future__ import annotations

from analysis.checks.training_declaration import training_check
from analysis.findings import roles, training_checks
from analysis.findings.calibration import rule
from analysis.findings.scopes import Words

CHECK = training_check(
    "T2",
    parts=training_checks.t2,
    rule=rule.ARM_CHANGE,
    says=((roles.ARM_EARLY, "early layers change more"), (roles.ARM_EARLY_LATE, "more early than late")),
    words=Words(
        holds="training on None CoT changes the early layers more",
        fails="training on None CoT does not change the early layers more",
        unresolved="these runs do not decide which arm changes the early layers more",
    ),
    plain="Training on fast thinking changes the early layers more than training on slow thinking",
    claim=(
        "Training on None CoT changes the early layers more than training on Detailed CoT, and more so than the "
        "late layers; the full Detailed CoT arm and the arm cut to the None-CoT token count (token-matched) both "
        "decide"
    ),
)
