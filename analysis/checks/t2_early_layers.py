"""T2: Training on fast thinking changes the early layers more than training on slow thinking."""

from __future__ import annotations

from analysis.checks.check_chapters import TRAINING
from analysis.findings import roles, training_checks
from analysis.findings.battery import TRAINING_FIXTURE
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import TrainingRunCheck, Words

CHECK = TrainingRunCheck(
    id=CheckId("T2"),
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
    parts=training_checks.t2,
    chapters=TRAINING,
    calibrated_by=(rule.ARM_CHANGE,),
)

BATTERY = TRAINING_FIXTURE
