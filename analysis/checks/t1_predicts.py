"""T1: A setting's gradient curve before training predicts where training on it changes the weights."""

from __future__ import annotations

from analysis.checks.training_declaration import training_check
from analysis.findings import roles, training_checks
from analysis.findings.calibration import rule
from analysis.findings.scopes import Words

CHECK = training_check(
    "T1",
    parts=training_checks.t1,
    rule=rule.RANK_CORRELATION,
    says=((roles.BEYOND_DEPTH, "beyond depth"),),
    words=Words(
        holds="the step-0 curve predicts the weight change beyond depth",
        fails="depth predicts the weight change better than the step-0 curve",
        unresolved="these runs do not decide which predicts the weight change better",
    ),
    plain="A setting's gradient curve before training predicts where training on it changes the weights",
    claim=(
        "The step-0 nuclear-norm curve of a setting predicts where training on it changes the weights better "
        "than depth alone: its Spearman correlation across layers with the weight change after K steps exceeds "
        "the layer index's (in absolute value); that difference decides"
    ),
)
