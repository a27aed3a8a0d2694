"""What a check declares for the battery that tests every check of a registry alike
(``tests/test_battery.py``, as scikit-learn's ``parametrize_with_checks`` tests every estimator):
the verdicts it can give, what it needs, and its fixture, inputs made by its own simulator
(``simulated_samples``, ``calibration.training_calibration``) where its claim is true, where it is
false and where what it needs is missing. A check left out of the battery says why
(``NotInBattery``), so that no check is left out silently. Nothing here names a check.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from analysis.findings import simulated_samples
from analysis.findings.calibration import training_calibration
from analysis.findings.rules import FAILS, HOLDS, TOO_FEW, UNRESOLVED, Verdict
from analysis.findings.scopes import Inputs
from analysis.findings.simulated_samples import Condition, SampleDesign
from analysis.findings.training_checks import TRAINING_RUNS

DECIDING = frozenset({HOLDS, FAILS, UNRESOLVED, TOO_FEW})  # what a check whose parts all decide can say


class Case(enum.Enum):
    """The inputs of a fixture: its claim true (effects at least 5 standard errors from the bound),
    false, or what the check needs missing."""

    TRUTH = "truth"
    FALSITY = "falsity"
    MISSING = "missing"


@dataclass(frozen=True, kw_only=True)
class Fixture:
    """A check's battery entry: ``verdicts``, every verdict it can give; ``needs``, what it needs
    (the ``missing`` inputs lack it) in a few words; ``truth``, ``falsity`` and ``missing``, the
    inputs of each case, drawn anew by each call."""

    verdicts: frozenset[Verdict]
    needs: str
    truth: Callable[[], Inputs]
    falsity: Callable[[], Inputs]
    missing: Callable[[], Inputs]

    def inputs(self, case: Case) -> Inputs:
        """The inputs of ``case``."""
        return {Case.TRUTH: self.truth, Case.FALSITY: self.falsity, Case.MISSING: self.missing}[case]()


@dataclass(frozen=True)
class NotInBattery:
    """A check the battery leaves out, and why."""

    reason: str


Battery = Fixture | NotInBattery  # what each check module declares (its ``BATTERY``)


# --------------------------------------------------------------------------- the fixtures' inputs

MATH = ("aqua", "gsm8k")  # a family of two datasets: every check's cells per dataset and pooled
MODEL = "m"
DESIGN = SampleDesign()  # 30 instructions per dataset, 12 layers, 200 resamples


def model_inputs(
    settings: Mapping[str, Condition],
    *,
    design: SampleDesign = DESIGN,
    datasets: Iterable[str] = MATH,
    sample_stats: tuple[str, ...] = (),
) -> Inputs:
    """One model's curves with ``settings`` (keyed "setting/responses") in each of ``datasets``."""
    conditions = {f"{d}/{key}": truth for d in datasets for key, truth in settings.items()}
    return Inputs(simulated_samples.draws({MODEL: conditions}, design=design, sample_stats=sample_stats))


def training_inputs(effects: training_calibration.Effects) -> Inputs:
    """A base model's fine-tuning runs simulated with ``effects`` in the training checks' design
    (``training_calibration.simulated_runs``), and no curves."""
    return Inputs({}, extra={TRAINING_RUNS: training_calibration.simulated_runs(effects)})
