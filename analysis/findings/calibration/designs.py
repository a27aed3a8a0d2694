"""How well the book's intervals and verdicts work, measured in the study's own design.

Data are simulated as the study's are (instructions nested in datasets; every instruction answered
under each setting, with correct and irrelevant responses; per-sample values log-normal, None CoT
far noisier than Detailed CoT; pooled datasets with unequal spreads and counts) and passed through
the functions the book uses: the quantities of ``quantities`` (``log_mean_curve``,
``corrected_roughness``), the estimates, pooling and intervals of ``bootstrap`` and the verdict rule
``rules.decide``. Every number the methods page quotes about error rates, coverage and power comes
from here, run by the tests and by the reproducibility page.

The designs (``Design``) are named after the checks whose quantity they simulate:

- ``gap``: a paired difference of mean logs between a noisy fast setting and a quiet slow one
  (F1, the length control L and L2, F3 under Detailed CoT, F4);
- ``same``: the same quantity tested for lying within the margin (F3 under None CoT, F5's Wiki part);
- ``roughness``: the noise-corrected roughness of a noisy and a quiet log curve (F2, F5's contrast);
- the rules of the training checks (``training_calibration.RULES``), in a training run's design.

``false_holds_table`` gives the share of "holds" when the claim is false at its boundary (no effect,
or a true value exactly at the margin), for the rules of this book and, for comparison, the rules
they replace; ``coverage_table`` the coverage of the 95% intervals with each one-sided miss;
``skew_table`` the coverage that chose logs of per-sample values over logs of mean values and the
exact bias factor over its square; ``share_table`` the coverage of intervals for an accuracy;
``power_table`` the share of "holds" at true effects and the instructions needed for 80% power.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.findings import checks, metrics
from analysis.findings.calibration import gap_calibration, ratio_sizes, training_calibration
from analysis.findings.bootstrap import LEVEL, Estimate, pooled, resample_counts
from analysis.findings.quantities import corrected_roughness, log_mean_curve
from analysis.findings.rules import (
    FAILS,
    HOLDS,
    SAME_MARGIN,
    Part,
    decide,
    instructions_for_power,
)

N_LAYERS = 18
# The simulated rules, in the order of the tables; each registered check names those that measure
# its error rates (``checks.Check.calibrated_by``). "paper MAD" is the former F2 rule, for comparison.
# The rules of the training checks are simulated in a training run's design (``training_calibration``).
RULES = ("gap", "same", "not better", "roughness", "paper MAD", *gap_calibration.RULES, *training_calibration.RULES)
# the rules whose claim can be made true in the simulation (for the false "does not hold" rate)
FAILS_RULES = ("gap", "same", "not better", "roughness")


class CalibrationError(checks.CheckError):
    """A check names a rule that has no simulation here."""


def checks_by_rule(registry: checks.Registry = checks.REGISTRY) -> dict[str, tuple[str, ...]]:
    """rule -> the checks of the registry whose error rates it measures, in ``RULES`` order (rules
    no check names left out)."""
    named = {}
    for check in registry:
        for rule in check.calibrated_by:
            if rule not in RULES:
                raise CalibrationError(f"check {check.id!r}: no simulation of rule {rule!r}; rules: {', '.join(RULES)}")
            named.setdefault(rule, []).append(check.id)
    return {rule: tuple(named[rule]) for rule in RULES if rule in named}


@dataclass(frozen=True)
class Design:
    """One simulated design: instructions per dataset, per-sample noise (log scale) of the fast
    and the slow condition per dataset, the spread of the instructions' own levels, and the
    skewness of the per-sample noise (0: normal; else ``ratio_sizes.log_noise``)."""

    counts: tuple[int, ...] = (5,)
    fast_sd: tuple[float, ...] = (0.6,)
    slow_sd: tuple[float, ...] = (0.15,)
    instruction_sd: float = 0.3
    skew: float = 0.0

    @property
    def label(self) -> str:
        return f"{len(self.counts)} x {'/'.join(map(str, self.counts))}"


def study_designs(n: int = 5) -> dict[str, Design]:
    """One dataset; a family of 4 datasets of ``n`` like the commonsense family of the cpu profile;
    and a family with unequal counts and one dataset six times noisier than the others."""
    return {
        "one dataset": Design((n,), (0.6,), (0.15,)),
        "4 datasets": Design((n,) * 4, (0.6,) * 4, (0.15,) * 4),
        "unequal datasets": Design((n, n, n + 3, 2 * n), (0.6, 0.6, 0.6, 3.6), (0.15, 0.15, 0.15, 0.9)),
    }


# --------------------------------------------------------------------------- one simulated run


def _paired_logs(rng, n: int, fast_sd: float, slow_sd: float, instruction_sd: float, effect: float, skew=0.0):
    """Per-instruction mean logs of the fast and the slow condition (true difference ``effect``),
    the noise of skewness ``skew``."""
    level = rng.normal(0.0, instruction_sd, n)
    noise = ratio_sizes.log_noise
    return level + effect + fast_sd * noise(rng, skew, n), level + slow_sd * noise(rng, skew, n)


def _gap_estimate(rng, design: Design, effect: float, n_resamples: int) -> Estimate:
    """The pooled mean log difference (``quantities.log_mean_curve`` of each condition, paired)."""
    per_dataset = []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        fast, slow = _paired_logs(rng, n, fast_sd, slow_sd, design.instruction_sd, effect, design.skew)
        weights = resample_counts(n, n_resamples, rng)
        (value_f,), draws_f = log_mean_curve(np.exp(fast)[:, None], weights)
        (value_s,), draws_s = log_mean_curve(np.exp(slow)[:, None], weights)
        per_dataset.append(Estimate(value_f - value_s, draws_f[:, 0] - draws_s[:, 0], ((f"d{h}", n),)))
    return pooled(per_dataset)


def _true_curve(layers: np.ndarray, wiggle: float) -> np.ndarray:
    return wiggle * np.sin(1.7 * layers)


def _rough_estimates(
    rng, design: Design, wiggle_fast: float, wiggle_slow: float, n_resamples: int
) -> tuple[Estimate, Estimate]:
    """Pooled roughness difference (fast - slow), noise-corrected, and the paper's log MAD ratio
    of the mean curves, for log curves with true step sizes set by the two wiggles."""
    layers = np.arange(N_LAYERS)
    corrected, paper = [], []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        level = rng.normal(0.0, design.instruction_sd, (n, 1))
        noise = [sd * ratio_sizes.log_noise(rng, design.skew, (n, N_LAYERS)) for sd in (fast_sd, slow_sd)]
        fast = np.exp(level + _true_curve(layers, wiggle_fast) + noise[0])
        slow = np.exp(level + _true_curve(layers, wiggle_slow) + noise[1])
        weights = resample_counts(n, n_resamples, rng)
        (vf, df_), (vs, ds) = corrected_roughness(fast, weights), corrected_roughness(slow, weights)
        strata = ((f"d{h}", n),)
        corrected.append(Estimate(vf - vs, df_ - ds, strata))
        mads = []
        for values in (fast, slow):
            means = (weights @ values) / n
            mads.append(
                (metrics.mean_absolute_difference(values.mean(axis=0)), metrics.mean_absolute_difference(means))
            )
        paper.append(Estimate(math.log(mads[0][0] / mads[1][0]), np.log(mads[0][1] / mads[1][1]), strata))
    return pooled(corrected), pooled(paper)


def true_roughness(wiggle: float) -> float:
    """Mean squared step of the true log curve of a given wiggle."""
    return float(np.mean(np.diff(_true_curve(np.arange(N_LAYERS), wiggle)) ** 2))


def _old_abs_rd(rng, design: Design, n_resamples: int) -> Estimate:
    """The former F3/F5 quantity, mean |RD| of two noisy mean curves that are truly equal."""
    per_dataset = []
    for h, (n, fast_sd) in enumerate(zip(design.counts, design.fast_sd)):
        level = rng.normal(0.0, design.instruction_sd, (n, 1))
        correct = np.exp(level + rng.normal(0.0, fast_sd, (n, N_LAYERS)))
        irrelevant = np.exp(level + rng.normal(0.0, fast_sd, (n, N_LAYERS)))
        weights = resample_counts(n, n_resamples, rng)
        a, b = correct.mean(axis=0), irrelevant.mean(axis=0)
        da, db = weights @ correct / n, weights @ irrelevant / n
        per_dataset.append(
            Estimate(float(np.mean(np.abs((b - a) / a))), np.mean(np.abs((db - da) / da), axis=1), ((f"d{h}", n),))
        )
    return pooled(per_dataset)


# --------------------------------------------------------------------------- error rates and coverage


def _rate(hits: int, reps: int) -> float:
    return hits / reps


def false_holds(check: str, design: Design, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" when the claim is false at its boundary, for the rule of ``check``:

    - ``gap``: "fast > slow" with no true difference;
    - ``same``: "nearly the same" with the true per-layer log ratio's root-mean-square over layers
      exactly at the margin, running from + to - across the layers (its signed mean 0);
    - ``not better``: F4's "no better" with the instruct model's separation exactly the margin
      larger than its base model's (the base separating, ``ratio_sizes.SEPARATING``);
    - ``roughness``: "fast rougher" with equally smooth true curves (None noisier);
    - ``paper MAD``: the former F2 rule (log MAD ratio > 0) on the same data;
    - ``old same``: the former F3/F5 rule (mean |RD| < 0.1) on truly equal curves (here the
      claim is true: this measures how often it was found, its power).
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        if check in gap_calibration.RULES:  # A1 and G1 (``gap_calibration``)
            hits += gap_calibration.holds(check, rng, design, n_resamples, rep)
            continue
        if check == "gap":
            part = Part("gap", _gap_estimate(rng, design, 0.0, n_resamples), "above", 0.0)
        elif check == "same":
            part = ratio_sizes.same_part(rng, design, SAME_MARGIN, n_resamples)
        elif check == "not better":
            separating = ratio_sizes.SEPARATING
            part = ratio_sizes.not_better_part(rng, design, separating + SAME_MARGIN, separating, n_resamples)
        elif check in ("roughness", "paper MAD"):
            corrected, paper = _rough_estimates(rng, design, 0.1, 0.1, n_resamples)
            part = Part(check, corrected if check == "roughness" else paper, "above", 0.0)
        elif check == "old same":
            part = Part(check, _old_abs_rd(rng, design, n_resamples), "below", 0.1)
        else:
            raise ValueError(f"unknown check {check!r}")
        hits += decide([part]) == HOLDS
    return _rate(hits, reps)


def false_fails(check: str, design: Design, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "does not hold" when the claim is true: ``gap`` with a true log difference of 0.2,
    ``same`` with equal curves, ``not better`` with separations of equal size, ``roughness``
    with the fast curve truly rougher (wiggle 0.2 against 0.1)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        if check == "gap":
            part = Part("gap", _gap_estimate(rng, design, 0.2, n_resamples), "above", 0.0)
        elif check == "same":
            part = ratio_sizes.same_part(rng, design, 0.0, n_resamples)
        elif check == "not better":
            separating = ratio_sizes.SEPARATING
            part = ratio_sizes.not_better_part(rng, design, separating, separating, n_resamples)
        elif check == "roughness":
            part = Part(check, _rough_estimates(rng, design, 0.2, 0.1, n_resamples)[0], "above", 0.0)
        else:
            raise ValueError(f"unknown check {check!r}")
        hits += decide([part]) == FAILS
    return _rate(hits, reps)


def false_holds_table(
    n: int = 5,
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
    rules: Sequence[str] | None = None,
    training: training_calibration.TrainingDesign | None = None,
    registry: checks.Registry = checks.REGISTRY,
) -> pd.DataFrame:
    """``false_holds`` of every rule that a check of the registry names (``checks_by_rule``; or of
    ``rules``) in every design of ``study_designs(n)`` (nominal: 2.5%), and ``false_fails`` of the
    book's rules (nominal: at most 2.5%), with the checks each rule stands for. The rules of the
    training checks are simulated in ``training`` (default: ``n`` probes, five seeds, eight layers)."""
    by_rule = checks_by_rule(registry)
    rules = rules or tuple(by_rule)
    rows = []
    for i, (name, design) in enumerate(study_designs(n).items()):
        for j, rule in enumerate(r for r in rules if r not in training_calibration.RULES):
            rate = false_holds(rule, design, reps, n_resamples, seed + 100 * i + j)
            wrong_fails = (
                false_fails(rule, design, reps, n_resamples, seed + 100 * i + j + 50) if rule in FAILS_RULES else None
            )
            rows.append(
                {
                    "rule": rule,
                    "checks": ", ".join(by_rule.get(rule, ())),
                    "design": name,
                    "instructions": design.label,
                    "reps": reps,
                    "holds when false": rate,
                    "does not hold when true": math.nan if wrong_fails is None else wrong_fails,
                }
            )
    rows += _training_rows(rules, by_rule, n, reps, n_resamples, seed, training)
    return pd.DataFrame(rows)


def _training_rows(rules, by_rule, n, reps, n_resamples, seed, design) -> list[dict]:
    """The rows of the training rules among ``rules``, from one set of simulations they share."""
    simulated = [r for r in rules if r in training_calibration.RULES]
    if not simulated:
        return []
    design = design or training_calibration.TrainingDesign(n=n)
    rates = training_calibration.false_holds(design, reps, n_resamples, seed)
    return [
        {
            "rule": rule,
            "checks": ", ".join(by_rule.get(rule, ())),
            "design": "training runs",
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
    n: int = 5, reps: int = 1000, n_resamples: int = 400, seed: int = 0, level: float = LEVEL
) -> pd.DataFrame:
    """Coverage of the 95% intervals of the gap (true 0.2) and of the roughness difference (true
    curves of different wiggle) in every design of ``study_designs(n)``, with the share of runs
    whose interval misses below the truth (truth under the interval) and above it."""
    rows = []
    truth = true_roughness(0.2) - true_roughness(0.1)
    for i, (name, design) in enumerate(study_designs(n).items()):
        rng = np.random.default_rng([seed, i])
        gaps = [(_gap_estimate(rng, design, 0.2, n_resamples), 0.2) for _ in range(reps)]
        rows.append(_coverage_row(f"gap ({name})", design, gaps, level))
        rough = [(_rough_estimates(rng, design, 0.2, 0.1, n_resamples)[0], truth) for _ in range(reps)]
        rows.append(_coverage_row(f"roughness difference ({name})", design, rough, level))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- choices made by measurement


def skew_table(
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
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Coverage of an accuracy's interval (``per_instruction`` samples per instruction, resampled
    by instruction, instructions' own accuracy varying around ``share``): the Wilson interval the
    book uses and the plain t interval, with how often the t interval leaves [0, 1] and how often
    an interval is [1, 1]."""
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


def power(design: Design, effect: float, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" for "fast > slow" (the ``gap`` rule) at a true log difference ``effect``."""
    rng = np.random.default_rng(seed)
    hits = sum(
        decide([Part("gap", _gap_estimate(rng, design, effect, n_resamples), "above", 0.0)]) == HOLDS
        for _ in range(reps)
    )
    return _rate(hits, reps)


def equivalence_power(design: Design, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" for "nearly the same" (F3 under None CoT, F5) when the curves are equal."""
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
    return instructions_for_power(Part("gap", scaled, "above", 0.0), assumed=effect)


def power_table(
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
                    "rule": "same (truth 0)" if effect is None else "gap",
                    "design": name,
                    "instructions": design.label,
                    "effect": math.nan if effect is None else effect,
                    "ratio": math.nan if effect is None else math.exp(effect),
                    "reps": reps,
                    "holds": (
                        equivalence_power(design, reps, n_resamples, seed + 10 * i + j)
                        if effect is None
                        else power(design, effect, reps, n_resamples, seed + 10 * i + j)
                    ),
                    "n for 80%": planned_instructions(design, effect, seed + 10 * i + j),
                }
            )
    return pd.DataFrame(rows)
