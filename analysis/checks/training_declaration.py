"""What T1-T3 declare alike: a check of the training runs (``scopes.TrainingRunCheck``), shown on the
chapter "During training" only, calibrated by one rule; each check's module gives what is its own."""

from __future__ import annotations

from analysis.checks.check_chapters import TRAINING
from analysis.findings.battery import TRAINING_FIXTURE
from analysis.findings.calibration.rule import Rule
from analysis.findings.roles import Role
from analysis.findings.rules import CheckId
from analysis.findings.scopes import RunParts, TrainingRunCheck, Words


def training_check(
    check_id: str,
    *,
    parts: RunParts,
    rule: Rule,
    says: tuple[tuple[Role, str], ...],
    words: Words,
    plain: str,
    claim: str,
) -> TrainingRunCheck:
    """The registry entry of a check of the training runs: only a training profile's book has the rows
    these checks read, so they show on its chapter alone; the battery draws the runs of all three
    (``battery.TRAINING_FIXTURE``)."""
    return TrainingRunCheck(
        id=CheckId(check_id),
        says=says,
        words=words,
        plain=plain,
        claim=claim,
        parts=parts,
        chapters=TRAINING,
        calibrated_by=(rule,),
        battery=TRAINING_FIXTURE,
    )
