"""How well the book's intervals and verdicts work, measured in the study's own design: the
designs and one simulated run of each rule.

Data are simulated as the study's are (instructions nested in datasets; every instruction answered
under each setting, with correct and irrelevant responses; per-sample values log-normal, None CoT
far noisier than Detailed CoT; pooled datasets with unequal spreads and counts) and passed through
the functions the book uses: the quantities of ``quantities`` (``log_mean_curve``,
``corrected_roughness``), the estimates and intervals of ``bootstrap``, a family's parts pooled as
the checks pool them (``family_part``: ``pooling.pool_parts``, each dataset's outcome deciding with
the mean) and the verdict rule ``rules.decide``. Every number the methods page quotes about error rates, coverage and power comes
from here (the tables are in ``calibration.rule_rates``), run by the tests and by the reproducibility page.

The simulated quantities are named after the checks whose quantity they simulate:

- the gap: a paired difference of mean logs between a noisy fast setting and a quiet slow one
  (F1, the length control L and L2, F3 under Detailed CoT, F4);
- "nearly the same": the same quantity tested for lying within the margin (F3 under None CoT, F5's Wiki part);
- the roughness: the noise-corrected roughness of a noisy and a quiet log curve (F2);
- the share: F5's contrast of the shares of roughness two pairs of curves keep.

One run of each rule of ``calibration.rule`` that is simulated in the study's design is a function
here (``gap_holds``, ``gap_fails``, ...; A3's and G1's are in ``gap_calibration``): the
rule's false "holds" when its claim is false at its boundary (no effect, or a true value exactly at
the margin), for the rules of this book and, for comparison, the rules they replace, and its false
"does not hold" when its claim is true. The rules of the training checks are simulated in a
training run's design (``training_calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.findings import check_parts, metrics, roles
from analysis.findings.bootstrap import Estimate, pooled, resample_counts
from analysis.findings.calibration import ratio_sizes
from analysis.findings.pooling import pool_parts
from analysis.findings.quantities import corrected_roughness, log_mean_curve
from analysis.findings.rules import FAILS, HOLDS, SAME_MARGIN, Part, Side, Verdict, decide

N_LAYERS = 18


@dataclass(frozen=True)
class Design:
    """One simulated design: instructions per dataset, per-sample noise (log scale) of the fast
    and the slow condition per dataset, the spread of the instructions' own levels, the
    skewness of the per-sample noise (0: normal; else ``ratio_sizes.log_noise``), and each
    dataset's own true effect beside the design's (``offsets``, summing to 0; none: one shared
    value), so that the family's mean over its datasets is the design's effect."""

    counts: tuple[int, ...] = (5,)
    fast_sd: tuple[float, ...] = (0.6,)
    slow_sd: tuple[float, ...] = (0.15,)
    instruction_sd: float = 0.3
    skew: float = 0.0
    offsets: tuple[float, ...] = ()

    def offset(self, h: int) -> float:
        """Dataset ``h``'s true effect beside the design's."""
        return self.offsets[h] if self.offsets else 0.0

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


def differing_designs(n: int = 5) -> dict[str, Design]:
    """Families whose datasets differ in their true effect, each dataset far from the family's
    mean: two datasets on opposite sides of it, as the study's math family; four, as its commonsense
    family. A family's interval estimates their mean (conditional on the datasets)."""
    return {
        "2 datasets apart": Design((n, n), (0.6, 0.6), (0.15, 0.15), offsets=(0.6, -0.6)),
        "4 datasets apart": Design((n,) * 4, (0.6,) * 4, (0.15,) * 4, offsets=(0.6, -0.6, 0.3, -0.3)),
    }


# --------------------------------------------------------------------------- one simulated run


def _paired_logs(rng, n: int, fast_sd: float, slow_sd: float, *, design: Design, effect: float):
    """Per-instruction mean logs of the fast and the slow condition (true difference ``effect``),
    the instructions' spread and the noise's skewness those of ``design``."""
    level = rng.normal(0.0, design.instruction_sd, n)
    noise = ratio_sizes.log_noise
    return level + effect + fast_sd * noise(rng, design.skew, n), level + slow_sd * noise(rng, design.skew, n)


def _pooled(per_dataset: Sequence[Estimate]) -> Estimate:
    """``pooled`` over a design's datasets, of which there is at least one."""
    estimate = pooled(per_dataset)
    assert estimate is not None, "a design has at least one dataset"
    return estimate


def family_part(per_dataset: Sequence[Estimate], *, name: str, side: Side, bound: float, **fields) -> Part:
    """A simulated deciding part as the book decides it: one dataset's own part, or a family's
    pooled from its datasets' parts by ``pooling.pool_parts`` (the mean with each dataset's own
    outcome, ``rules.family_outcome``); ``fields``: the part's other fields (``margin``,
    ``equivalence``, ...)."""
    parts = [
        Part(name=name, estimate=e, side=side, bound=bound, role=roles.SIMULATED, decides=True, **fields)
        for e in per_dataset
    ]
    return parts[0] if len(parts) == 1 else pool_parts({f"d{h}": [p] for h, p in enumerate(parts)})[0]


def _gap_estimate(rng, design: Design, effect: float, n_resamples: int) -> Estimate:
    """The pooled mean log difference (``quantities.log_mean_curve`` of each condition, paired)."""
    return _pooled(_gap_estimates(rng, design, effect, n_resamples))


def _gap_estimates(rng, design: Design, effect: float, n_resamples: int) -> list[Estimate]:
    """Each dataset's mean log difference (``quantities.log_mean_curve`` of each condition, paired),
    dataset ``h``'s true difference ``effect`` plus its offset."""
    per_dataset = []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        fast, slow = _paired_logs(rng, n, fast_sd, slow_sd, design=design, effect=effect + design.offset(h))
        weights = resample_counts(n, n_resamples, rng)
        (value_f,), draws_f = log_mean_curve(np.exp(fast)[:, None], weights)
        (value_s,), draws_s = log_mean_curve(np.exp(slow)[:, None], weights)
        per_dataset.append(Estimate(value_f - value_s, draws_f[:, 0] - draws_s[:, 0], ((f"d{h}", n),)))
    return per_dataset


def _true_curve(layers: np.ndarray, wiggle: float) -> np.ndarray:
    return wiggle * np.sin(1.7 * layers)


def _rough_estimates(
    rng, design: Design, wiggle_fast: float, wiggle_slow: float, *, n_resamples: int
) -> tuple[Estimate, Estimate]:
    """Pooled roughness difference (fast - slow), noise-corrected, and the paper's log MAD ratio
    of the mean curves, for log curves with true step sizes set by the two wiggles."""
    corrected, paper = _rough_per_dataset(rng, design, wiggle_fast, wiggle_slow, n_resamples=n_resamples)
    return _pooled(corrected), _pooled(paper)


def _rough_per_dataset(
    rng, design: Design, wiggle_fast: float, wiggle_slow: float, *, n_resamples: int
) -> tuple[list[Estimate], list[Estimate]]:
    """``_rough_estimates`` dataset by dataset."""
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
    return corrected, paper


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
    simplified, detailed = _pooled([a for a, _ in reasoning]), _pooled([b for _, b in reasoning])
    return Part(
        name="share",
        estimate=check_parts.share_contrast(short, long, simplified, detailed),
        side="above",
        bound=0.0,
        role=roles.SIMULATED,
        decides=True,
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
    return _pooled(per_dataset)


# --------------------------------------------------------------------------- one run of each rule
# Each rule of ``calibration.rule`` runs one of these per simulated repetition (``rule.false_holds``,
# ``rule.false_fails``): whether one run on data drawn from ``rng`` in ``design`` says "holds" when
# its claim is false at its boundary, or "does not hold" when its claim is true.


def _rate(hits: int, reps: int) -> float:
    return hits / reps


def _says(part: Part, verdict: Verdict) -> bool:
    return decide([part]) == verdict


def gap_part(rng: np.random.Generator, design: Design, effect: float, n_resamples: int) -> Part:
    """The part "fast > slow" on a simulated gap of true log difference ``effect`` (plus each
    dataset's offset), decided as the book decides it (``family_part``)."""
    return family_part(_gap_estimates(rng, design, effect, n_resamples), name="gap", side="above", bound=0.0)


def gap_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "fast > slow" with no true difference."""
    return _says(gap_part(rng, design, 0.0, n_resamples), HOLDS)


def gap_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "fast > slow" with a true log difference of 0.2."""
    return _says(gap_part(rng, design, 0.2, n_resamples), FAILS)


def same_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" with the true per-layer log ratio's root-mean-square over layers exactly
    at the margin, running from + to - across the layers (its signed mean 0)."""
    return _says(ratio_sizes.same_part(rng, design, SAME_MARGIN, n_resamples), HOLDS)


def same_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" with equal curves."""
    return _says(ratio_sizes.same_part(rng, design, 0.0, n_resamples), FAILS)


def not_better_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """F4's "no better" with the instruct model's separation exactly the margin larger than its base
    model's (the base separating, ``ratio_sizes.SEPARATING``)."""
    separating = ratio_sizes.SEPARATING
    part = ratio_sizes.not_better_part(rng, design, separating + SAME_MARGIN, separating, n_resamples=n_resamples)
    return _says(part, HOLDS)


def not_better_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """F4's "no better" with separations of equal size."""
    separating = ratio_sizes.SEPARATING
    return _says(ratio_sizes.not_better_part(rng, design, separating, separating, n_resamples=n_resamples), FAILS)


def roughness_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "fast rougher" with equally smooth true curves (None noisier)."""
    corrected, _paper = _rough_per_dataset(rng, design, 0.1, 0.1, n_resamples=n_resamples)
    return _says(family_part(corrected, name="roughness", side="above", bound=0.0), HOLDS)


def roughness_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "fast rougher" with the fast curve truly rougher (wiggle 0.2 against 0.1)."""
    corrected, _paper = _rough_per_dataset(rng, design, 0.2, 0.1, n_resamples=n_resamples)
    return _says(family_part(corrected, name="roughness", side="above", bound=0.0), FAILS)


def share_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """F5's "Wiki keeps more of its roughness" with both shares exactly a quarter (not resolved, so
    never "holds", where a shorter curve's roughness is not established)."""
    return _says(_share_part(rng, design, n_resamples), HOLDS)


def paper_mad_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """The former F2 rule (log MAD ratio > 0) on the data of ``roughness_holds``."""
    _corrected, paper = _rough_estimates(rng, design, 0.1, 0.1, n_resamples=n_resamples)
    return _says(
        Part(name="paper MAD", estimate=paper, side="above", bound=0.0, role=roles.SIMULATED, decides=True), HOLDS
    )


def old_same_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """The former F3/F5 rule (mean |RD| < 0.1) on truly equal curves (here the claim is true: this
    measures how often it was found, its power)."""
    return _says(
        Part(
            name="old same",
            estimate=_old_abs_rd(rng, design, n_resamples),
            side="below",
            bound=0.1,
            role=roles.SIMULATED,
            decides=True,
        ),
        HOLDS,
    )
