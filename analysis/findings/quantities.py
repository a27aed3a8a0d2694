"""The quantities of one dataset that the checks are built from, each with its resampled values.

Levels, gaps and correct-vs-irrelevant differences are means of the logs of per-sample values (a
geometric mean, null value zero when the settings do not differ); the roughness of a curve is the
mean squared step of the log curve with its noise term removed. The paper's own numbers (MAD of the
mean curve, mean RD) are computed here too, to be shown beside them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from analysis import vocabulary
from analysis.findings import metrics
from analysis.findings.bootstrap import (
    PROJECTIONS,
    CurveDraws,
    Estimate,
    combine,
    log_ratio,
    resampled_mean,
)


def _segment(n_layers: int, segment: str) -> tuple[int, int]:
    return (0, n_layers) if segment == "all" else metrics.layer_splits(n_layers)[segment]


def _estimate(value, draws, dataset: str, n: int) -> Estimate:
    return Estimate(float(value), np.asarray(draws, dtype=float), ((dataset, int(n)),))


def mean_level(
    cd: CurveDraws,
    dataset: str,
    setting: str,
    segment: str = "all",
    responses: str = vocabulary.CORRECT,
    stat: str = "nuclear_norm",
) -> Estimate | None:
    """Mean of a condition's curves over q, k, v, o and the segment's layers (arithmetic means:
    the number the figures show)."""
    condition = cd.condition_key(dataset, setting, responses)
    if not cd.has(condition, stat):
        return None
    lo, hi = _segment(cd.n_layers, segment)
    estimate, draws = cd.stacked(condition, stat)
    return _estimate(
        estimate[:, lo:hi].mean(), draws[:, :, lo:hi].mean(axis=(0, 2)), dataset, cd.count(condition, stat)
    )


def mad(cd: CurveDraws, dataset: str, setting: str, proj: str, stat: str = "nuclear_norm") -> Estimate | None:
    """All-layer MAD of one projection's mean curve (correct responses): the paper's number."""
    key = (cd.condition_key(dataset, setting), proj, stat)
    if key not in cd.estimate:
        return None
    return _estimate(
        metrics.mean_absolute_difference(cd.estimate[key]),
        metrics.mean_absolute_difference(cd.draws[key]),
        dataset,
        cd.n_samples[key],
    )


def log_mad_ratio(cd: CurveDraws, dataset: str, slow: str, fast: str) -> Estimate | None:
    """log(MAD(slow) / MAD(fast)) of the mean curves, averaged over q, k, v, o (the paper's view)."""
    ratios = [
        log_ratio(a, b)
        for p in vocabulary.PROJECTIONS
        if (a := mad(cd, dataset, slow, p)) is not None and (b := mad(cd, dataset, fast, p)) is not None
    ]
    if len(ratios) < len(vocabulary.PROJECTIONS):
        return None
    return combine(lambda *r: np.mean(np.stack(r), axis=0), *ratios)


def rd_level(
    cd: CurveDraws, dataset: str, setting: str, signed: bool = False, excluded: Iterable[int] = ()
) -> Estimate | None:
    """Mean |RD| (or mean RD) over layers of irrelevant against correct mean curves, averaged over
    q, k, v, o; instructions in ``excluded`` are left out of both curves. The paper's number, shown
    in tables; noise pushes mean |RD| up, so no verdict rests on it (see ``log_rd``)."""
    a, b = (cd.condition_key(dataset, setting, r) for r in vocabulary.RESPONSES)
    if not (cd.has(a) and cd.has(b)):
        return None
    excluded = set(excluded)
    (ea, da, na), (eb, db, nb) = cd.stacked_without(a, excluded), cd.stacked_without(b, excluded)
    if min(na, nb) == 0:
        return None

    def summary(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        rd = metrics.relative_difference(x, y)
        return metrics.finite_mean(rd if signed else np.abs(rd))

    return _estimate(np.mean(summary(ea, eb)), np.mean(summary(da, db), axis=0), dataset, min(na, nb))


# Quantities on the logs of per-sample values. Each is a mean over instructions (or, for the
# roughness, an unbiased estimate built from such means), so its null value is zero at any n.


def log_mean_curve(matrix: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean log curve of a samples x layers matrix of positive values (L,) and under each
    resample's counts (R, L)."""
    logs = np.log(matrix)
    return logs.mean(axis=0), resampled_mean(logs, weights)


def corrected_roughness(matrix: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean over layer steps of the squared step of the mean log curve, less its noise term.

    With d_i the steps log v[l+1] - log v[l] of sample i, the squared step of the mean curve
    overshoots the true one by var(d) / n on average; the mean over pairs of distinct instructions
    of d_i d_j (a U-statistic, equal to mean(d)^2 - s^2 / n) has no such term: it is zero for a flat
    true curve at any n, and the same for equally smooth curves however noisy their samples. Under
    a resample, pairs of copies of one instruction are left out, as in the statistic itself.
    Value and (R,) resampled values (NaN for a resample of one distinct instruction).
    """
    steps = np.diff(np.log(matrix), axis=1)
    n = steps.shape[0]
    if n < 2:
        return math.nan, np.full(weights.shape[0], np.nan)
    value = float(np.mean(steps.mean(axis=0) ** 2 - steps.var(axis=0, ddof=1) / n))
    pairs = weights.sum(axis=1) ** 2 - (weights**2).sum(axis=1)
    products = (weights @ steps) ** 2 - weights**2 @ steps**2
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.where(pairs > 0, products.mean(axis=1) / pairs, np.nan)
    return value, draws


def _positive_samples(
    cd: CurveDraws, condition: str, proj: str, stat: str, excluded: Iterable[int] = ()
) -> tuple[np.ndarray, np.ndarray] | None:
    """(samples x layers matrix, resample counts) of one curve's positive samples, without ``excluded``."""
    key = (condition, proj, stat)
    if key not in cd.samples:
        return None
    matrix, ids = cd.samples[key]
    keep = ~np.isin(ids, np.asarray(sorted(set(excluded)), dtype=int))
    matrix, ids = matrix[keep], ids[keep]
    if matrix.shape[0] == 0 or not np.all(matrix > 0):
        return None
    return matrix, cd.resampling.weights(cd.conditions[condition][0], ids)


def log_level(
    cd: CurveDraws,
    dataset: str,
    setting: str,
    segment: str = "all",
    responses: str = vocabulary.CORRECT,
    excluded: Iterable[int] = (),
    stat: str = "nuclear_norm",
) -> Estimate | None:
    """Mean log value of a condition over q, k, v, o and the segment's layers (the log of a
    geometric mean); differences of two are paired log ratios."""
    condition = cd.condition_key(dataset, setting, responses)
    lo, hi = _segment(cd.n_layers, segment)
    values, draws, counts = [], [], []
    for proj in PROJECTIONS:
        samples = _positive_samples(cd, condition, proj, stat, excluded)
        if samples is None:
            return None
        value, draw = log_mean_curve(*samples)
        values.append(value[lo:hi].mean())
        draws.append(draw[:, lo:hi].mean(axis=1))
        counts.append(samples[0].shape[0])
    return _estimate(np.mean(values), np.mean(draws, axis=0), dataset, min(counts))


def log_gap(cd: CurveDraws, dataset: str, fast: str, slow: str, segment: str = "all") -> Estimate | None:
    """Mean log value of ``fast`` minus that of ``slow`` (correct responses)."""
    a, b = log_level(cd, dataset, fast, segment), log_level(cd, dataset, slow, segment)
    return None if a is None or b is None else combine(np.subtract, a, b)


def log_rd(cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()) -> Estimate | None:
    """Signed mean per-layer log ratio of irrelevant over correct responses (over q, k, v, o):
    the noise-free counterpart of the mean RD, zero when the two curves are equal."""
    irrelevant = log_level(cd, dataset, setting, responses=vocabulary.IRRELEVANT, excluded=excluded)
    correct = log_level(cd, dataset, setting, excluded=excluded)
    return None if irrelevant is None or correct is None else combine(np.subtract, irrelevant, correct)


def roughness(cd: CurveDraws, dataset: str, setting: str, proj: str, stat: str = "nuclear_norm") -> Estimate | None:
    """``corrected_roughness`` of one projection's curve (correct responses)."""
    samples = _positive_samples(cd, cd.condition_key(dataset, setting), proj, stat)
    if samples is None:
        return None
    value, draws = corrected_roughness(*samples)
    return _estimate(value, draws, dataset, samples[0].shape[0])


def mean_roughness(cd: CurveDraws, dataset: str, setting: str) -> Estimate | None:
    """``roughness`` averaged over q, k, v, o."""
    each = [roughness(cd, dataset, setting, p) for p in PROJECTIONS]
    if any(e is None for e in each):
        return None
    return combine(lambda *r: np.mean(np.stack(r), axis=0), *each)
