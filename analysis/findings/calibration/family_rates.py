"""Error rates of the family rules where a family's datasets differ, simulated through the functions
the book uses: two datasets, each a paired mean log difference as in the study's design
(``designs._gap_estimates``), whose true values are equal, one with an effect and one without, or
opposite; each family decided as the checks decide it (``designs.family_part``) and, beside it, by
its mean alone (the rule it replaces).

Two family rules: a part "above" its bound without a margin (the rule ``gap``: F1, F2, L, L2, ...)
is decided by the mean of its datasets unless a dataset is decided against it; an "about the same"
or "within" claim (the rule ``within``: A5 and S's steps; F3's "nearly the same" and F4's "no
better" are decided alike) only where every dataset is. The claim a family makes is about the mean
of its datasets for the first, about every dataset for the second. The datasets are quiet (log-scale
spreads 0.08 and 0.04, 20 instructions each), so that "within the margin" can be decided at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.findings.calibration.designs import Design, _gap_estimates, _rate, family_part
from analysis.findings.calibration.rule import GAP, WITHIN, Rule
from analysis.findings.calibration.rule_rates import checks_by_rule
from analysis.findings.rules import DISAGREE, FAILS, HOLDS, SAME_MARGIN, Part, Unit, decide

if TYPE_CHECKING:
    from analysis.findings.check_registry import Registry

FAMILY = Design((20, 20), (0.08, 0.08), (0.04, 0.04))  # two quiet datasets of 20 instructions
MARGIN = SAME_MARGIN


@dataclass(frozen=True)
class Scenario:
    """Two datasets' true values (log ratios) under one family rule, and whether the family's claim
    is then true."""

    name: str
    values: tuple[float, float]
    claim_true: bool


# The directional rule: the family's claim is about the mean of its datasets' true values.
GAP_SCENARIOS = (
    Scenario("equal, no effect", (0.0, 0.0), False),
    Scenario("one with an effect, one without", (2 * MARGIN, 0.0), True),
    Scenario("opposite effects", (2 * MARGIN, -2 * MARGIN), False),
    Scenario("+1.0 and -1.2", (1.0, -1.2), False),
)
# The every-dataset rule: the family's claim ("about the same") is about each dataset.
WITHIN_SCENARIOS = (
    Scenario("equal, at the margin", (MARGIN, MARGIN), False),
    Scenario("one beyond the margin, one without a difference", (1.5 * MARGIN, 0.0), False),
    Scenario("opposite, beyond the margin", (1.5 * MARGIN, -1.5 * MARGIN), False),
    Scenario("equal, no difference", (0.0, 0.0), True),
)


def _family(rng: np.random.Generator, scenario: Scenario, rule: Rule, n_resamples: int) -> Part:
    """One simulated family of ``scenario``, its part decided by ``rule``'s family rule."""
    values = scenario.values
    offsets = (values[0] - np.mean(values), values[1] - np.mean(values))
    design = replace(FAMILY, offsets=offsets)
    estimates = _gap_estimates(rng, design, float(np.mean(values)), n_resamples)
    if rule is WITHIN:
        return family_part(estimates, name=rule.name, side="within", bound=MARGIN, unit=Unit.RATIO)
    return family_part(estimates, name=rule.name, side="above", bound=0.0, unit=Unit.RATIO)


def _row(rule: Rule, scenario: Scenario, *, reps: int, n_resamples: int, seed: int) -> dict:
    """The verdicts of ``reps`` simulated families of ``scenario``, under ``rule``'s family rule
    and under the mean alone."""
    rng = np.random.default_rng(seed)
    counts = {HOLDS: 0, FAILS: 0, DISAGREE: 0}
    mean_wrong = 0
    wrong = FAILS if scenario.claim_true else HOLDS
    for _ in range(reps):
        part = _family(rng, scenario, rule, n_resamples)
        verdict = decide([part])
        counts[verdict] = counts.get(verdict, 0) + 1
        mean_wrong += decide([replace(part, per_dataset=())]) is wrong
    return {
        "holds": _rate(counts[HOLDS], reps),
        "does not hold": _rate(counts[FAILS], reps),
        "the datasets disagree": _rate(counts[DISAGREE], reps),
        "error": _rate(counts[wrong], reps),
        "error of the mean alone": _rate(mean_wrong, reps),
    }


def family_table(*, registry: Registry, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> pd.DataFrame:
    """Per family rule and scenario: the datasets' true values (as ratios), whether the family's claim
    is true, and the shares of ``reps`` simulated families (``n_resamples`` resamples each, from
    ``seed``) that hold, do not hold and whose datasets disagree; its error (a "holds" where the
    claim is false, a "does not hold" where it is true) beside that of the mean alone. The checks
    each rule stands for are those of ``registry``."""
    by_rule = checks_by_rule(registry)
    rows = []
    for i, (rule, scenarios, how) in enumerate(
        (
            (GAP, GAP_SCENARIOS, "the mean, unless a dataset is decided against it"),
            (WITHIN, WITHIN_SCENARIOS, "every dataset"),
        )
    ):
        for j, scenario in enumerate(scenarios):
            rows.append(
                {
                    "rule": rule.name,
                    "checks": ", ".join(by_rule.get(rule, ())),
                    "family decided by": how,
                    "datasets": scenario.name,
                    "true ratios": ", ".join(f"{math.exp(v):.3g}" for v in scenario.values),
                    "claim": "true" if scenario.claim_true else "false",
                    "reps": reps,
                    **_row(rule, scenario, reps=reps, n_resamples=n_resamples, seed=seed + 10 * i + j),
                }
            )
    return pd.DataFrame(rows)
