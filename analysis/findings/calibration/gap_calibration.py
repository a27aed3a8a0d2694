"""Error rates of A3 and G1, simulated in the study's design through the functions the book uses.

- ``beyond loss`` (G1): pairs of a correct and an irrelevant response per instruction, each a set of
  token losses (gamma-distributed, R tokens; the irrelevant response's larger by ``LOSS_SHIFT`` on
  the log scale, so that the loss tells them apart with an AUROC near 0.8), whose layer curves
  are a non-linear function of the token losses and carry nothing more: per feature, a slope times
  1/2 log sum_t (1 - exp(-loss_t))^2 - log R (orthogonal token gradients, each scaling with 1 - p),
  plus a term in sqrt(largest token loss) x (their standard deviation), plus noise of the design's
  skewness (``CURVE_NOISE``, in turn). Neither term is a function of G1's covariates that its
  partialling fits exactly. G1's statistic (``beyond_loss.beyond_estimate``, pooled, on the matched
  pairs where ``beyond_loss.matched_decides`` says so, the gate ``beyond_loss.separated``) must then
  say "holds" at most 2.5% of the time; with ``effect`` added
  to the irrelevant response's curves in half the features, the same runs give its power
  (``beyond_loss_holds``).

- ``equal loss`` (A3): per instruction, a log-nuclear gap that is the answer's loss gap and nothing
  more, y = slope x + noise, with x the gap in mean log(1 - p) (noise of the design's fast setting,
  skewed as the design's): A3's intercept (``regression.equal_loss_regression``, pooled) must then
  say "holds" at most 2.5% of the time, where the covariate's gaps straddle 0 and, in every other
  repetition, where they all lie on one side of it (``COVARIATE_CENTRES``: the intercept extrapolates).

One run of each is ``beyond_loss_null_holds`` and ``equal_loss_holds``, the simulations of the
rules ``rule.BEYOND_LOSS`` and ``rule.EQUAL_LOSS``, which
``calibration.false_holds`` runs in its designs (``calibration.Design``).
"""

from __future__ import annotations

import numpy as np

from analysis.findings import beyond_loss, regression, roles, same_tokens
from analysis.findings.bootstrap import Estimate, pooled, resample_counts
from analysis.findings.calibration import ratio_sizes
from analysis.findings.calibration.designs import Design
from analysis.findings.pooling import pool_parts
from analysis.findings.rules import HOLDS, Part, decide

GAP_LAYERS = 6
LOSS_SHIFT = 0.5  # irrelevant less correct log scale of the token losses: a loss AUROC near 0.8
TOKEN_SHAPE = 0.6  # gamma shape of the token losses (a long upper tail: a few tokens carry the loss)
CURVE_NOISE = (0.05, 0.3, 1.0)  # noise of the curves around the token losses' function, per repetition in turn
# A3: the mean of the covariate's gaps in units of their spread, per repetition in turn (0: they
# straddle 0; 3: all on one side, the intercept an extrapolation), and the true slope
COVARIATE_CENTRES = (0.0, 3.0)
EQUAL_LOSS_SLOPE = 0.8


def _token_losses(rng, n: int, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, longest) token losses, NaN beyond each response's R tokens, and R (n,): gamma losses
    whose log scale is ``shift`` plus noise, R log-normal around 30."""
    tokens = np.clip(np.round(30 * np.exp(rng.normal(0.0, 0.6, n))), 2, 150).astype(int)
    scale = np.exp(shift + rng.normal(0.0, 0.4, n))
    losses = rng.gamma(TOKEN_SHAPE, 1.0, (n, int(tokens.max()))) * scale[:, None]
    losses[np.arange(losses.shape[1]) >= tokens[:, None]] = np.nan
    return losses, tokens


def _token_pairs(rng, design, n: int, *, noise: float, effect: float) -> beyond_loss.Pairs:
    """One dataset's pairs: curves a non-linear function of the token losses plus noise, and
    ``effect`` on the irrelevant response's second half of the features."""
    level = rng.normal(0.0, 0.3, n)
    slope, cross = rng.normal(1.0, 0.3, 4 * GAP_LAYERS), rng.normal(0.3, 0.1, 4 * GAP_LAYERS)
    planted = effect * (np.arange(slope.size) >= slope.size // 2)
    curves, covariates = [], []
    for label in (0, 1):
        losses, tokens = _token_losses(rng, n, level + LOSS_SHIFT * label)
        largest, spread = np.nanmax(losses, axis=1), np.nanstd(losses, axis=1)
        miss = 0.5 * np.log(np.nansum((1 - np.exp(-losses)) ** 2, axis=1)) - np.log(tokens)
        value = miss[:, None] * slope + (np.sqrt(largest) * spread)[:, None] * cross + label * planted
        curves.append(value + noise * ratio_sizes.log_noise(rng, design.skew, value.shape))
        covariates.append(np.column_stack([np.nanmean(losses, axis=1), largest, spread, np.log(tokens)]))
    return beyond_loss.Pairs(np.arange(n), curves[1] - curves[0], covariates[0], covariates[1], beyond_loss.READS)


def beyond_loss_holds(rng, design, *, noise: float, effect: float = 0.0) -> bool:
    """Whether one simulated run of G1 (pooled over the design's datasets where there are two or more,
    through the registry's pooling, p-value and gate) says "holds"."""
    per_dataset = [
        beyond_loss.dataset_parts(
            _token_pairs(rng, design, n, noise=noise, effect=effect), f"d{h}", "detailed", decides=True
        )
        for h, n in enumerate(design.counts)
    ]
    parts = (
        per_dataset[0]
        if len(per_dataset) == 1
        else beyond_loss.after_pooling(pool_parts({f"d{h}": p for h, p in enumerate(per_dataset)}))
    )
    parts, _ = beyond_loss.matched_decides(parts)
    return not beyond_loss.separated(parts) and decide(parts) == HOLDS


def equal_loss_estimate(rng, design, n_resamples: int, *, centre: float, effect: float = 0.0) -> Estimate | None:
    """A3's pooled intercept where the log-nuclear gap is ``effect`` plus the answer loss's gap times
    ``EQUAL_LOSS_SLOPE`` plus noise, the covariate's gaps centred at ``centre`` spreads from 0."""
    per_dataset = []
    for h, (n, fast_sd) in enumerate(zip(design.counts, design.fast_sd)):
        x = centre + rng.normal(0.0, 1.0, n)
        y = effect + EQUAL_LOSS_SLOPE * x + fast_sd * ratio_sizes.log_noise(rng, design.skew, n)
        intercept, _ = regression.equal_loss_regression(y, x, resample_counts(n, n_resamples, rng), f"d{h}")
        per_dataset.append(intercept)
    return pooled(per_dataset)


def equal_loss_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, repetition: int) -> bool:
    """Whether one simulated run of A3, the log-nuclear gap the loss gap alone, says "holds" (the
    covariate's gaps centred at ``COVARIATE_CENTRES``, in turn by ``repetition``)."""
    centre = COVARIATE_CENTRES[repetition % len(COVARIATE_CENTRES)]
    estimate = equal_loss_estimate(rng, design, n_resamples, centre=centre)
    return (
        decide(
            [
                Part(
                    name=same_tokens.A3_PART,
                    estimate=estimate,
                    side="above",
                    bound=0.0,
                    role=roles.SIMULATED,
                    decides=True,
                )
            ]
        )
        == HOLDS
    )


def beyond_loss_null_holds(rng: np.random.Generator, design: Design, *, repetition: int, **_: object) -> bool:
    """Whether one simulated run of G1, the curves carrying nothing beyond the token losses, says
    "holds" (the curves' noise ``CURVE_NOISE``, in turn by ``repetition``; a permutation test: no
    bootstrap resamples)."""
    return beyond_loss_holds(rng, design, noise=CURVE_NOISE[repetition % len(CURVE_NOISE)])
