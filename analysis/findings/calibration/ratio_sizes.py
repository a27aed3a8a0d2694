"""Simulated sizes of per-layer log ratios: the rules "nearly the same" (F3 under None CoT, F5's
Wiki part) and "separates no better" (F4), in the study's design (``calibration.Design``).

Every instruction is answered with a correct and an irrelevant response; the log of each response's
per-sample value is its instruction's level, the true per-layer log ratio (irrelevant only) and
noise half shared by a sample's layers and half its own at each layer, of the design's spread and
skew (``log_noise``). The quantities are those of the book: ``quantities.corrected_mean_square``
of the paired per-layer log ratios, its root (``quantities.root_mean_square``) for a size, pooled
over datasets as the checks pool them ("nearly the same" and "no better" in every dataset:
``designs.family_part``) and decided by ``rules.decide``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from analysis.findings.bootstrap import Estimate, resample_counts
from analysis.findings.quantities import corrected_mean_square, size_excess
from analysis.findings.rules import SAME_MARGIN, Part

if TYPE_CHECKING:
    from analysis.findings.calibration.designs import Design

N_LAYERS = 18
# A per-layer log ratio that runs from + to - across the layers (mean over layers 0), scaled to a
# root-mean-square of 1: the curves differ in most layers and the signed mean hides it.
CANCELLING = np.linspace(1.0, -1.0, N_LAYERS) / math.sqrt(np.mean(np.linspace(1.0, -1.0, N_LAYERS) ** 2))
CONSTANT = np.ones(N_LAYERS)  # the same ratio in every layer
# The size of a separating model's Detailed-CoT ratio in the simulations of F4 (irrelevant 1.5
# times correct in every layer, the synthetic paper picture's).
SEPARATING = math.log(1.5)


def log_noise(rng: np.random.Generator, skew: float, size) -> np.ndarray:
    """Unit-variance noise of skewness ``skew``: normal at 0, else a centred gamma of shape
    4 / skew^2 (skewness 1: shape 4; 2: an exponential), mirrored for a negative skew."""
    if skew == 0:
        return rng.standard_normal(size)
    shape = 4.0 / skew**2
    return math.copysign(1.0, skew) * (rng.gamma(shape, 1.0, size) - shape) / math.sqrt(shape)


def _sample_noise(rng: np.random.Generator, skew: float, n: int) -> np.ndarray:
    """(n, layers) noise of one response type: half shared by a sample's layers, half its own."""
    return math.sqrt(0.5) * log_noise(rng, skew, (n, 1)) + math.sqrt(0.5) * log_noise(rng, skew, (n, N_LAYERS))


def mean_squares(
    rng: np.random.Generator,
    design: Design,
    sizes: tuple[float, ...],
    shapes: tuple[np.ndarray, ...],
    *,
    sds: tuple[float, ...],
    n_resamples: int,
) -> list[list[Estimate]]:
    """Per dataset, one noise-corrected mean square of the per-layer log ratio per model (true
    ratio ``size * shape``), the models answering the same instructions under the same resamples."""
    out = []
    for h, (n, sd) in enumerate(zip(design.counts, sds)):
        weights = resample_counts(n, n_resamples, rng)
        row = []
        for size, shape in zip(sizes, shapes):
            ratios = size * shape + sd * (_sample_noise(rng, design.skew, n) - _sample_noise(rng, design.skew, n))
            value, draws = corrected_mean_square(ratios, weights)
            row.append(Estimate(value, draws, ((f"d{h}", n),)))
        out.append(row)
    return out


def same_part(rng: np.random.Generator, design: Design, size: float, n_resamples: int, *, shape=CANCELLING) -> Part:
    """F3's None-CoT part on simulated noisy None-CoT responses whose true per-layer ratio has a
    root-mean-square ``size`` over layers (``shape``)."""
    from analysis.findings.calibration.designs import family_part

    per_dataset = mean_squares(rng, design, (size,), (shape,), sds=design.fast_sd, n_resamples=n_resamples)
    return family_part(
        [row[0] for row in per_dataset], name="same", side="below", bound=SAME_MARGIN**2, equivalence=True
    )


def not_better_part(
    rng: np.random.Generator, design: Design, instruct: float, base: float, *, n_resamples: int, shape=CONSTANT
) -> Part:
    """F4's part on simulated Detailed-CoT responses of an instruct and a base model whose true
    per-layer ratios have sizes ``instruct`` and ``base``: the instruct size's excess over the
    base's plus the margin (``quantities.size_excess``), per dataset, pooled, below 0."""
    from analysis.findings.calibration.designs import family_part

    per_dataset = mean_squares(
        rng, design, (instruct, base), (shape, shape), sds=design.slow_sd, n_resamples=n_resamples
    )
    excess = [size_excess(a, b, SAME_MARGIN) for a, b in per_dataset]
    return family_part(excess, name="not better", side="below", bound=0.0, equivalence=True)
