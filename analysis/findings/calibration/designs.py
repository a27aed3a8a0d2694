"""How well the book's intervals and verdicts work, measured in the study's own design: the
designs and one simulated run of each rule.

Data are simulated as the study's are (instructions nested in datasets; every instruction answered
under each setting, with correct and irrelevant responses; per-sample values log-normal, None CoT
far noisier than Detailed CoT; pooled datasets with unequal spreads and counts) and passed through
the functions the book uses: the quantities of ``quantities`` (``log_mean_curve``,
``corrected_roughness``), the estimates, pooling and intervals of ``bootstrap`` and the verdict rule
``rules.decide``. Every number the methods page quotes about error rates, coverage and power comes
from here (the tables are in ``calibration.rule_rates``), run by the tests and by the reproducibility page.

The designs (``Design``) are named after the checks whose quantity they simulate:

- ``gap``: a paired difference of mean logs between a noisy fast setting and a quiet slow one
  (F1, the length control L and L2, F3 under Detailed CoT, F4);
- ``same``: the same quantity tested for lying within the margin (F3 under None CoT, F5's Wiki part);
- ``roughness``: the noise-corrected roughness of a noisy and a quiet log curve (F2);
- ``share``: F5's contrast of the shares of roughness two pairs of curves keep;
- the rules of the training checks (``training_calibration.RULES``), in a training run's design.

``false_holds`` gives the share of "holds" when the claim is false at its boundary (no effect, or a
true value exactly at the margin), for the rules of this book and, for comparison, the rules they
replace; ``false_fails`` the share of "does not hold" when the claim is true.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.core.errors import StudyError
from analysis.findings import check_parts, checks, metrics
from analysis.findings.bootstrap import Estimate, pooled, resample_counts
from analysis.findings.calibration import gap_calibration, ratio_sizes, training_calibration
from analysis.findings.quantities import corrected_roughness, log_mean_curve
from analysis.findings.rules import (
    FAILS,
    HOLDS,
    SAME_MARGIN,
    Part,
    Role,
    decide,
)

N_LAYERS = 18
# The simulated rules, in the order of the tables; each registered check names those that measure
# its error rates (``checks.Check.calibrated_by``). "paper MAD" is the former F2 rule, for comparison.
# The rules of the training checks are simulated in a training run's design (``training_calibration``).
RULES = (
    "gap",
    "same",
    "not better",
    "roughness",
    "share",
    "paper MAD",
    *gap_calibration.RULES,
    *training_calibration.RULES,
)
# the rules whose claim can be made true in the simulation (for the false "does not hold" rate)
FAILS_RULES = ("gap", "same", "not better", "roughness")


def checks_by_rule(registry: checks.Registry = checks.REGISTRY) -> dict[str, tuple[str, ...]]:
    """rule -> the checks of the registry whose error rates it measures, in ``RULES`` order (rules
    no check names left out)."""
    named = {}
    for check in registry:
        for rule in check.calibrated_by:
            if rule not in RULES:
                raise StudyError(f"check {check.id!r}: no simulation of rule {rule!r}; rules: {', '.join(RULES)}")
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


def _paired_logs(rng, n: int, fast_sd: float, slow_sd: float, *, design: Design, effect: float):
    """Per-instruction mean logs of the fast and the slow condition (true difference ``effect``),
    the instructions' spread and the noise's skewness those of ``design``."""
    level = rng.normal(0.0, design.instruction_sd, n)
    noise = ratio_sizes.log_noise
    return level + effect + fast_sd * noise(rng, design.skew, n), level + slow_sd * noise(rng, design.skew, n)


def _gap_estimate(rng, design: Design, effect: float, n_resamples: int) -> Estimate:
    """The pooled mean log difference (``quantities.log_mean_curve`` of each condition, paired)."""
    per_dataset = []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        fast, slow = _paired_logs(rng, n, fast_sd, slow_sd, design=design, effect=effect)
        weights = resample_counts(n, n_resamples, rng)
        (value_f,), draws_f = log_mean_curve(np.exp(fast)[:, None], weights)
        (value_s,), draws_s = log_mean_curve(np.exp(slow)[:, None], weights)
        per_dataset.append(Estimate(value_f - value_s, draws_f[:, 0] - draws_s[:, 0], ((f"d{h}", n),)))
    return pooled(per_dataset)


def _true_curve(layers: np.ndarray, wiggle: float) -> np.ndarray:
    return wiggle * np.sin(1.7 * layers)


def _rough_estimates(
    rng, design: Design, wiggle_fast: float, wiggle_slow: float, *, n_resamples: int
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


# F5's share at its boundary: the shorter and the longer response's true log curves of these wiggles,
# so that Wiki 100 -> 1000 words and Simplified -> Detailed CoT each keep a quarter of the roughness.
SHARE_WIGGLES = (0.2, 0.1)


def _roughness_pair(rng, design: Design, n: int, sds: tuple[float, float], *, n_resamples: int, stratum: str):
    """Noise-corrected roughness of a shorter, noisier and a longer, quieter response's log curves
    (true wiggles ``SHARE_WIGGLES``, noise sds ``sds``), on the same ``n`` instructions."""
    layers = np.arange(N_LAYERS)
    level = rng.normal(0.0, design.instruction_sd, (n, 1))
    weights = resample_counts(n, n_resamples, rng)
    pair = []
    for wiggle, sd in zip(SHARE_WIGGLES, sds):
        values = np.exp(
            level + _true_curve(layers, wiggle) + sd * ratio_sizes.log_noise(rng, design.skew, (n, N_LAYERS))
        )
        value, draws = corrected_roughness(values, weights)
        pair.append(Estimate(value, draws, ((stratum, n),)))
    return pair


def _share_part(rng, design: Design, n_resamples: int) -> Part:
    """F5's share contrast (``check_parts.share_contrast``) with both shares truly a quarter: Wiki
    one dataset like the design's first, the reasoning curves pooled over the design's datasets."""
    short, long = _roughness_pair(
        rng, design, design.counts[0], (design.fast_sd[0], design.slow_sd[0]), n_resamples=n_resamples, stratum="wiki"
    )
    reasoning = [
        _roughness_pair(rng, design, n, (fast_sd, slow_sd), n_resamples=n_resamples, stratum=f"d{h}")
        for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd))
    ]
    simplified, detailed = pooled([a for a, _ in reasoning]), pooled([b for _, b in reasoning])
    return Part(
        "share", check_parts.share_contrast(short, long, simplified, detailed), "above", 0.0, role=Role.SIMULATED
    )


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


def false_holds(check: str, design: Design, *, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "holds" when the claim is false at its boundary, for the rule of ``check``:

    - ``gap``: "fast > slow" with no true difference;
    - ``same``: "nearly the same" with the true per-layer log ratio's root-mean-square over layers
      exactly at the margin, running from + to - across the layers (its signed mean 0);
    - ``not better``: F4's "no better" with the instruct model's separation exactly the margin
      larger than its base model's (the base separating, ``ratio_sizes.SEPARATING``);
    - ``roughness``: "fast rougher" with equally smooth true curves (None noisier);
    - ``share``: F5's "Wiki keeps more of its roughness" with both shares exactly a quarter (not
      resolved, so never "holds", where a shorter curve's roughness is not established);
    - ``paper MAD``: the former F2 rule (log MAD ratio > 0) on the same data;
    - ``old same``: the former F3/F5 rule (mean |RD| < 0.1) on truly equal curves (here the
      claim is true: this measures how often it was found, its power).
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        if check in gap_calibration.RULES:  # A1 and G1 (``gap_calibration``)
            hits += gap_calibration.holds(check, rng, design, n_resamples, repetition=rep)
            continue
        if check == "gap":
            part = Part("gap", _gap_estimate(rng, design, 0.0, n_resamples), "above", 0.0, role=Role.SIMULATED)
        elif check == "same":
            part = ratio_sizes.same_part(rng, design, SAME_MARGIN, n_resamples)
        elif check == "not better":
            separating = ratio_sizes.SEPARATING
            part = ratio_sizes.not_better_part(
                rng, design, separating + SAME_MARGIN, separating, n_resamples=n_resamples
            )
        elif check == "share":
            part = _share_part(rng, design, n_resamples)
        elif check in ("roughness", "paper MAD"):
            corrected, paper = _rough_estimates(rng, design, 0.1, 0.1, n_resamples=n_resamples)
            part = Part(check, corrected if check == "roughness" else paper, "above", 0.0, role=Role.SIMULATED)
        elif check == "old same":
            part = Part(check, _old_abs_rd(rng, design, n_resamples), "below", 0.1, role=Role.SIMULATED)
        else:
            raise ValueError(f"unknown check {check!r}")
        hits += decide([part]) == HOLDS
    return _rate(hits, reps)


def false_fails(check: str, design: Design, *, reps: int = 1000, n_resamples: int = 400, seed: int = 0) -> float:
    """Share of "does not hold" when the claim is true: ``gap`` with a true log difference of 0.2,
    ``same`` with equal curves, ``not better`` with separations of equal size, ``roughness``
    with the fast curve truly rougher (wiggle 0.2 against 0.1)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        if check == "gap":
            part = Part("gap", _gap_estimate(rng, design, 0.2, n_resamples), "above", 0.0, role=Role.SIMULATED)
        elif check == "same":
            part = ratio_sizes.same_part(rng, design, 0.0, n_resamples)
        elif check == "not better":
            separating = ratio_sizes.SEPARATING
            part = ratio_sizes.not_better_part(rng, design, separating, separating, n_resamples=n_resamples)
        elif check == "roughness":
            part = Part(
                check,
                _rough_estimates(rng, design, 0.2, 0.1, n_resamples=n_resamples)[0],
                "above",
                0.0,
                role=Role.SIMULATED,
            )
        else:
            raise ValueError(f"unknown check {check!r}")
        hits += decide([part]) == FAILS
    return _rate(hits, reps)
