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
from analysis.findings.rules import DISAGREE, FAILS, HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED, Verdict
from analysis.findings.scopes import Inputs
from analysis.findings.simulated_samples import Condition, SampleDesign
from analysis.findings.training_checks import TRAINING_RUNS

# what a check whose parts all decide can say (over a family, also that its datasets disagree)
DECIDING = frozenset({HOLDS, FAILS, UNRESOLVED, TOO_FEW, DISAGREE})


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


Battery = Fixture | NotInBattery  # what each check declares (its ``battery``)


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


# --------------------------------------------------------------------------- fixtures several checks share

# T1, T2 and T3: simulated fine-tuning runs with the effects the training calibration takes as true
# or false; no runs at all where what they need is missing.
TRAINING_FIXTURE = Fixture(
    verdicts=(DECIDING - {DISAGREE}) | {NOT_APPLICABLE},  # one dataset's runs: no family
    needs="a base model's fine-tuning runs",
    truth=lambda: training_inputs(training_calibration.TRUE_EFFECTS),
    falsity=lambda: training_inputs(training_calibration.FALSE_EFFECTS),
    missing=lambda: Inputs({}),
)


def length_inputs(*, simplified: float, cut: float) -> Inputs:
    """Simplified CoT and Detailed CoT cut to its length ``simplified`` and ``cut`` above the full
    Detailed CoT in log level (L's and L2's inputs)."""
    levels = {"simplified": simplified, "detailed": 0.0, "detailed_cut_simplified": cut}
    return model_inputs({f"{s}/correct": Condition(curve=level) for s, level in levels.items()})


def length_fixture(*, cut_if_false: float) -> Fixture:
    """L's or L2's fixture: Simplified CoT 0.7 above the full Detailed CoT (the gap they need,
    established) and the cut one 0.35 above it where the claim is true, ``cut_if_false`` where it is
    false; Simplified CoT below Detailed CoT (no gap) where what they need is missing."""
    return Fixture(
        verdicts=DECIDING | {NOT_APPLICABLE},
        needs="a Simplified vs Detailed gap, established",
        truth=lambda: length_inputs(simplified=0.7, cut=0.35),
        falsity=lambda: length_inputs(simplified=0.7, cut=cut_if_false),
        missing=lambda: length_inputs(simplified=-0.5, cut=-0.25),
    )
