"""The tables of the rules' error rates that the methods page quotes, from the simulated runs of
the rules of ``calibration.rule`` (in the designs of ``calibration.designs``).

``checks_by_rule`` says which checks of a registry each rule stands for; ``false_holds_table``
gives the share of "holds" when the claim is false at its boundary (no effect, or a true value
exactly at the margin), for the rules of this book and, for comparison, the rules they replace; ``coverage_table`` the coverage of the 95% intervals with each one-sided miss;
``log_ratio_coverage_table`` the coverage that chose logs of per-sample values over logs of mean values and the
exact bias factor over its square; ``share_table`` the coverage of intervals for an accuracy;
``power_table`` the share of "holds" at true effects and the instructions needed for 80% power.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.core import processes
from analysis.core.errors import StudyError
from analysis.findings import roles
from analysis.findings.bootstrap import LEVEL, Estimate, resample_counts
from analysis.findings.calibration import ratio_sizes, training_calibration
from analysis.findings.calibration.designs import (
    Design,
    _gap_estimate,
    _rate,
    _rough_estimates,
    differing_designs,
    gap_part,
    study_designs,
    true_roughness,
)
from analysis.findings.calibration.rule import GAP, RULES, SAME, Rule, SimulatedIn, false_fails, false_holds
from analysis.findings.rules import HOLDS, Part, decide, instructions_for_power

if TYPE_CHECKING:
    from analysis.findings.check_registry import Registry


def checks_by_rule(registry: Registry) -> dict[Rule, tuple[str, ...]]:
    """rule -> the checks of ``registry`` whose error rates it measures, in ``rule.RULES`` order and
    then the rules only that registry declares (rules no check names left out)."""
    named: dict[Rule, list[str]] = {}
    for check in registry:
        for rule in check.calibrated_by:
            if not isinstance(rule, Rule):
                raise StudyError(f"check {check.id!r}: {rule!r} is not a rule (a calibration.rule.Rule)")
            named.setdefault(rule, []).append(check.id)
    order = [*(r for r in RULES if r in named), *(r for r in named if r not in RULES)]
    return {rule: tuple(named[rule]) for rule in order}


def false_holds_table(
    n: int = 5,
    rules: Sequence[Rule] | None = None,
    training: training_calibration.TrainingDesign | None = None,
    *,
    registry: Registry,
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
) -> pd.DataFrame:
    """``false_holds`` of every rule that a check of ``registry`` names
    (``checks_by_rule``; or of ``rules``) in every design of ``study_designs(n)`` (nominal: 2.5%),
    and ``false_fails`` of the rules whose claim is also made true (``Rule.fails``; nominal: at
    most 2.5%), with the checks each rule stands for. The rules of the training checks are
    simulated in ``training`` (default: ``n`` probes, five seeds, eight layers).
    Each rule in each design: ``reps`` simulated runs of ``n_resamples`` bootstrap resamples, from
    ``seed``."""
    by_rule = checks_by_rule(registry)
    rules = rules or tuple(by_rule)
    simulated = [r for r in rules if r.simulated_in is SimulatedIn.STUDY]
    designs = list(study_designs(n).items())
    cells = [(name, design, rule) for name, design in designs for rule in simulated]
    jobs = [
        {"rule": rule, "design": design, "reps": reps, "n_resamples": n_resamples, "seed": seed + 100 * i + j}
        for i, (_, design) in enumerate(designs)
        for j, rule in enumerate(simulated)
    ]
    rows = [
        {
            "rule": rule.name,
            "checks": ", ".join(by_rule.get(rule, ())),
            "design": name,
            "instructions": design.label,
            "reps": reps,
            "holds when false": rate,
            "does not hold when true": wrong_fails,
        }
        for (name, design, rule), (rate, wrong_fails) in zip(cells, processes.each(_false_rates, jobs))
    ]
    rows += _training_rows(rules, by_rule, n, design=training, reps=reps, n_resamples=n_resamples, seed=seed)
    return pd.DataFrame(rows)


def _false_rates(*, rule: Rule, design: Design, reps: int, n_resamples: int, seed: int) -> tuple[float, float]:
    """A rule's share of "holds" when its claim is false in one design, and of "does not hold" when it
    is true (nan where the rule makes no such claim), each from its own seed."""
    rate = false_holds(rule, design, reps=reps, n_resamples=n_resamples, seed=seed)
    if rule.fails is None:
        return rate, math.nan
    return rate, false_fails(rule, design, reps=reps, n_resamples=n_resamples, seed=seed + 50)


def _training_rows(rules, by_rule, n, *, design, reps: int, n_resamples: int, seed: int) -> list[dict]:
    """The rows of the training rules among ``rules``, from one set of simulations they share."""
    simulated = [r for r in rules if r.simulated_in is SimulatedIn.TRAINING_RUNS]
    if not simulated:
        return []
    design = design or training_calibration.TrainingDesign(n=n)
    rates = training_calibration.largest_false_holds(design, reps, n_resamples, seed)
    return [
        {
            "rule": rule.name,
            "checks": ", ".join(by_rule.get(rule, ())),
            "design": rule.simulated_in.value,
            "instructions": design.label,
            "reps": reps,
            "holds when false": rates[rule],
            "does not hold when true": math.nan,
        }
        for rule in simulated
    ]


def _coverage_row(name: str, design: Design, values: Sequence[tuple[Estimate, float]], level: float) -> dict:
    low_miss = high_miss = 0
    for estimate, truth in values:
        low, high = estimate.interval(level)
        low_miss += bool(truth < low)
        high_miss += bool(truth > high)
    reps = len(values)
    return {
        "quantity": name,
        "instructions": design.label,
        "reps": reps,
        "coverage": 1 - (low_miss + high_miss) / reps,
        "miss below": low_miss / reps,
        "miss above": high_miss / reps,
    }


def coverage_table(
    *, n: int = 5, reps: int = 1000, n_resamples: int = 400, seed: int = 0, level: float = LEVEL
) -> pd.DataFrame:
    """Coverage of the 95% intervals of the gap (true 0.2) and of the roughness difference (true
    curves of different wiggle) in every design of ``study_designs(n)``, with the share of runs
    whose interval misses below the truth (truth under the interval) and above it."""
    jobs = [
        {"name": name, "design": design, "reps": reps, "n_resamples": n_resamples, "seed": [seed, i], "level": level}
        for i, (name, design) in enumerate(study_designs(n).items())
    ]
    return pd.DataFrame([row for rows in processes.each(_design_coverage, jobs) for row in rows])


def _design_coverage(
    *, name: str, design: Design, reps: int, n_resamples: int, seed: list[int], level: float
) -> list[dict]:
    """``coverage_table``'s two rows of one design: the gap's, then the roughness difference's."""
    rng = np.random.default_rng(seed)
    truth = true_roughness(0.2) - true_roughness(0.1)
    gaps = [(_gap_estimate(rng, design, 0.2, n_resamples), 0.2) for _ in range(reps)]
    rough = [(_rough_estimates(rng, design, 0.2, 0.1, n_resamples=n_resamples)[0], truth) for _ in range(reps)]
    return [
        _coverage_row(f"gap ({name})", design, gaps, level),
        _coverage_row(f"roughness difference ({name})", design, rough, level),
    ]


def conditional_coverage_table(
    *, n: int = 5, reps: int = 1000, n_resamples: int = 400, seed: int = 0, level: float = LEVEL
) -> pd.DataFrame:
    """Coverage of the 95% gap interval of a family whose datasets differ (``differing_designs``):
    the truth is the mean of the datasets' true effects (0.2), the family's estimand."""
    rows = []
    for i, (name, design) in enumerate(differing_designs(n).items()):
        rng = np.random.default_rng([seed, 100 + i])
        gaps = [(_gap_estimate(rng, design, 0.2, n_resamples), 0.2) for _ in range(reps)]
        rows.append(_coverage_row(f"gap ({name})", design, gaps, level))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- choices made by measurement


def log_ratio_coverage_table(
    *,
    ns: Sequence[int] = (5, 20),
    sigmas: Sequence[float] = (0.3, 1.0),
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Coverage of a paired log ratio of two settings (true ratio 1.2, log-normal values of
    spread ``sigma``) computed three ways: the log of the ratio of the arithmetic means with the
    exact bias factor sqrt(n / (n - 1)); the same with that factor squared (the former rule); and
    the mean of the per-instruction log ratios (the logs of per-sample values: the rule chosen)."""
    rows = []
    for n in ns:
        for sigma in sigmas:
            rng = np.random.default_rng([seed, n, int(100 * sigma)])
            misses = {"log of mean ratio": [0, 0], "log of mean ratio, factor squared": [0, 0], "mean of logs": [0, 0]}
            for _ in range(reps):
                level_ = rng.normal(0.0, 0.3, n)
                fast = np.exp(level_ + math.log(1.2) + rng.normal(0.0, sigma, n))
                slow = np.exp(level_ + rng.normal(0.0, sigma, n))
                weights = resample_counts(n, n_resamples, rng)
                ratio = Estimate(
                    math.log(fast.mean() / slow.mean()), np.log((weights @ fast) / (weights @ slow)), (("d", n),)
                )
                logs = Estimate(
                    float(np.mean(np.log(fast) - np.log(slow))),
                    weights @ (np.log(fast) - np.log(slow)) / n,
                    (("d", n),),
                )
                truth = math.log(1.2)
                for name, estimate, widen in (
                    ("log of mean ratio", ratio, 1.0),
                    ("log of mean ratio, factor squared", ratio, math.sqrt(n / (n - 1))),
                    ("mean of logs", logs, 1.0),
                ):
                    low, high = estimate.interval(level)
                    half = (high - low) / 2 * widen
                    misses[name][0] += bool(truth < estimate.value - half)
                    misses[name][1] += bool(truth > estimate.value + half)
            for name, (below, above) in misses.items():
                rows.append(
                    {
                        "quantity": name,
                        "n": n,
                        "sigma": sigma,
                        "reps": reps,
                        "coverage": 1 - (below + above) / reps,
                        "miss below": below / reps,
                        "miss above": above / reps,
                    }
                )
    return pd.DataFrame(rows)


def share_table(
    ns: Sequence[int] = (10, 20),
    shares: Sequence[float] = (0.8, 0.95),
    per_instruction: int = 3,
    *,
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Coverage of an accuracy's interval (``per_instruction`` samples per instruction, resampled
    by instruction, instructions' own accuracy varying around ``share``): the Wilson interval the
    book uses and the plain t interval, with how often the t interval leaves [0, 1] and how often
    an interval is [1, 1]: ``reps`` simulated runs of ``n_resamples`` bootstrap resamples, from
    ``seed``, intervals at ``level``."""
    rows = []
    for n in ns:
        for share in shares:
            rng = np.random.default_rng([seed, n, int(1000 * share)])
            tallies = {"Wilson": [0, 0, 0], "t": [0, 0, 0]}
            for _ in range(reps):
                own = rng.beta(share * 20, (1 - share) * 20, n)
                hits = rng.binomial(per_instruction, own) / per_instruction
                weights = resample_counts(n, n_resamples, rng)
                draws = weights @ hits / n
                for name, bounded in (("Wilson", True), ("t", False)):
                    low, high = Estimate(float(hits.mean()), draws, (("d", n),), bounded=bounded).interval(level)
                    if not np.isfinite(low):
                        low = high = float(hits.mean())
                    tallies[name][0] += bool(low <= share <= high)
                    tallies[name][1] += bool(low < 0 or high > 1)
                    tallies[name][2] += bool(low >= 1)
            for name, (covered, outside, degenerate) in tallies.items():
                rows.append(
                    {
                        "interval": name,
                        "instructions": n,
                        "true accuracy": share,
                        "reps": reps,
                        "coverage": covered / reps,
                        "outside [0, 1]": outside / reps,
                        "[1, 1]": degenerate / reps,
                    }
                )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- power


def power(design: Design, effect: float, *, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" for "fast > slow" (the rule ``rule.GAP``) at a true log difference ``effect``."""
    rng = np.random.default_rng(seed)
    hits = sum(decide([gap_part(rng, design, effect, n_resamples)]) == HOLDS for _ in range(reps))
    return _rate(hits, reps)


def equivalence_power(design: Design, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" for "nearly the same" (the rule ``rule.SAME``: F3 under None CoT, F5) when the
    curves are equal."""
    rng = np.random.default_rng(seed)
    hits = sum(decide([ratio_sizes.same_part(rng, design, 0.0, n_resamples)]) == HOLDS for _ in range(reps))
    return _rate(hits, reps)


def planned_instructions(design: Design, effect: float | None, seed: int = 0, n_resamples: int = 2000) -> int | None:
    """``rules.instructions_for_power`` for the gap (``effect``), from one large simulated run of
    the design (its spread measured); None for "nearly the same" (``effect`` None): a mean square
    at a true 0 has a spread that shrinks as 1 / n, not 1 / sqrt(n), so the normal-theory size
    does not apply to it (its power is simulated: ``equivalence_power``)."""
    if effect is None:
        return None
    rng = np.random.default_rng(seed)
    big = replace(design, counts=tuple(200 for _ in design.counts))
    estimate = _gap_estimate(rng, big, 0.0, n_resamples)
    scaled = Estimate(
        estimate.value,
        estimate.value + (estimate.draws - estimate.value) * math.sqrt(200 / design.counts[0]),
        tuple((d, design.counts[0]) for d, _ in estimate.strata),
        estimate.variances,
    )
    return instructions_for_power(
        Part(name="gap", estimate=scaled, side="above", bound=0.0, role=roles.SIMULATED, decides=True), assumed=effect
    )


def power_table(
    *,
    effects: Sequence[float] = (0.1, 0.2, 0.4),
    n: int = 5,
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
) -> pd.DataFrame:
    """Power of the gap rule at true effects (log ratios) and of the equivalence rule at a true 0,
    in each design of ``study_designs(n)``, with the instructions per dataset that
    ``rules.instructions_for_power`` says give 80%."""
    rows = []
    for i, (name, design) in enumerate(study_designs(n).items()):
        for j, effect in enumerate([*effects, None]):
            rows.append(
                {
                    "rule": f"{SAME.name} (truth 0)" if effect is None else GAP.name,
                    "design": name,
                    "instructions": design.label,
                    "effect": math.nan if effect is None else effect,
                    "ratio": math.nan if effect is None else math.exp(effect),
                    "reps": reps,
                    "holds": (
                        equivalence_power(design, reps, n_resamples, seed + 10 * i + j)
                        if effect is None
                        else power(design, effect, reps=reps, n_resamples=n_resamples, seed=seed + 10 * i + j)
                    ),
                    "n for 80%": planned_instructions(design, effect, seed + 10 * i + j),
                }
            )
    return pd.DataFrame(rows)
