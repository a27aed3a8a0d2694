"""The quantities of one dataset that the checks are built from, each with its resampled values.

Levels, gaps and correct-vs-irrelevant differences are means of the logs of per-sample values (a
geometric mean, null value zero when the settings do not differ); the roughness of a curve is the
mean squared step of the log curve with its noise term removed. The paper's own numbers (MAD of the
mean curve, mean RD) are computed here too, to be shown beside them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from analysis.core import vocabulary
from analysis.findings import metrics
from analysis.findings.bootstrap import (
    PROJECTIONS,
    CurveDraws,
    Estimate,
    combine,
    log_ratio,
    resampled_mean,
)
from analysis.findings.studentized import StudentizedEstimate, log_mean_contrast


def _segment(n_layers: int, segment: str) -> tuple[int, int]:
    return (0, n_layers) if segment == "all" else metrics.layer_splits(n_layers)[segment]


def _estimate(value, draws, dataset: str, n: int) -> Estimate:
    return Estimate(float(value), np.asarray(draws, dtype=float), ((dataset, int(n)),))


def mean_level(
    cd: CurveDraws,
    dataset: str,
    setting: str,
    *,
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


def mad(cd: CurveDraws, dataset: str, setting: str, proj: str, *, stat: str = "nuclear_norm") -> Estimate | None:
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
    cd: CurveDraws, dataset: str, setting: str, *, signed: bool = False, excluded: Iterable[int] = ()
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


def corrected_mean_square(values: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean over columns of the squared mean column of a samples x columns matrix, less its noise term.

    The squared mean of n values overshoots the square of their true mean by var / n on average;
    the mean over pairs of distinct instructions of x_i x_j (a U-statistic, equal to
    mean(x)^2 - s^2 / n) has no such term: its expectation is the true mean squared at any n, zero
    when the true mean is zero however noisy the samples. Under a resample, pairs of copies of one
    instruction are left out, as in the statistic itself. Value and (R,) resampled values (NaN for
    a resample of one distinct instruction). The roughness of a curve is this of its layer steps;
    the size of a per-layer log ratio this of the log ratios.
    """
    n = values.shape[0]
    if n < 2:
        return math.nan, np.full(weights.shape[0], np.nan)
    value = float(np.mean(values.mean(axis=0) ** 2 - values.var(axis=0, ddof=1) / n))
    pairs = weights.sum(axis=1) ** 2 - (weights**2).sum(axis=1)
    products = (weights @ values) ** 2 - weights**2 @ values**2
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.where(pairs > 0, products.mean(axis=1) / pairs, np.nan)
    return value, draws


def corrected_roughness(matrix: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean over layer steps of the squared step of the mean log curve, less its noise term.

    With d_i the steps log v[l+1] - log v[l] of sample i, the squared step of the mean curve
    overshoots the true one by var(d) / n on average; ``corrected_mean_square`` of the steps (the
    mean over pairs of distinct instructions of d_i d_j) has no such term: it is zero for a flat
    true curve at any n, and the same for equally smooth curves however noisy their samples.
    Value and (R,) resampled values.
    """
    return corrected_mean_square(np.diff(np.log(matrix), axis=1), weights)


def _positive_samples(
    cd: CurveDraws, condition: str, proj: str, stat: str, *, excluded: Iterable[int] = ()
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
    *,
    responses: str = vocabulary.CORRECT,
    excluded: Iterable[int] = (),
    stat: str = "nuclear_norm",
) -> Estimate | None:
    """Mean log value of a condition over q, k, v, o and the segment's layers (the log of a
    geometric mean); differences of two are paired log ratios. Which samples and statistic it
    reads: the ``responses``, the instructions left out (``excluded``), the statistic (``stat``)."""
    condition = cd.condition_key(dataset, setting, responses)
    lo, hi = _segment(cd.n_layers, segment)
    values, draws, counts = [], [], []
    for proj in PROJECTIONS:
        samples = _positive_samples(cd, condition, proj, stat, excluded=excluded)
        if samples is None:
            return None
        value, draw = log_mean_curve(*samples)
        values.append(value[lo:hi].mean())
        draws.append(draw[:, lo:hi].mean(axis=1))
        counts.append(samples[0].shape[0])
    return _estimate(np.mean(values), np.mean(draws, axis=0), dataset, min(counts))


def log_gap(cd: CurveDraws, dataset: str, fast: str, slow: str, *, segment: str = "all") -> Estimate | None:
    """Mean log value of ``fast`` minus that of ``slow`` (correct responses)."""
    a, b = log_level(cd, dataset, fast, segment), log_level(cd, dataset, slow, segment)
    return None if a is None or b is None else combine(np.subtract, a, b)


def log_rd(cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()) -> Estimate | None:
    """Signed mean per-layer log ratio of irrelevant over correct responses (over q, k, v, o):
    the noise-free counterpart of the mean RD, zero when the two curves are equal."""
    irrelevant = log_level(cd, dataset, setting, responses=vocabulary.IRRELEVANT, excluded=excluded)
    correct = log_level(cd, dataset, setting, excluded=excluded)
    return None if irrelevant is None or correct is None else combine(np.subtract, irrelevant, correct)


def paired_log_ratios(
    cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-layer log ratios of irrelevant over correct responses, paired by instruction: an
    instructions x (projections x layers) matrix over the instructions both response types have
    (without ``excluded``), and their resample counts; None when a curve is missing."""
    conditions = [cd.condition_key(dataset, setting, r) for r in (vocabulary.IRRELEVANT, vocabulary.CORRECT)]
    by_id = []
    for condition in conditions:
        for proj in PROJECTIONS:
            key = (condition, proj, "nuclear_norm")
            if _positive_samples(cd, condition, proj, "nuclear_norm", excluded=excluded) is None:
                return None
            matrix, ids = cd.samples[key]
            by_id.append(dict(zip(ids.tolist(), np.log(matrix))))
    shared = sorted(set.intersection(*(set(b) for b in by_id)) - set(excluded))
    if not shared:
        return None
    k = len(PROJECTIONS)
    ratios = [np.stack([by_id[p][i] - by_id[k + p][i] for i in shared]) for p in range(k)]
    ids = np.asarray(shared, dtype=int)
    return np.concatenate(ratios, axis=1), cd.resampling.weights(cd.conditions[conditions[1]][0], ids)


def log_rd_mean_square(cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()) -> Estimate | None:
    """Mean over layers and q, k, v, o of the squared per-layer log ratio of irrelevant over
    correct, noise-corrected (``corrected_mean_square`` of ``paired_log_ratios``): the true curves'
    mean square difference at any n, zero only when they are equal in every layer, so opposite
    differences in different layers do not cancel as in ``log_rd``."""
    paired = paired_log_ratios(cd, dataset, setting, excluded)
    if paired is None or paired[0].shape[0] < 2:
        return None
    value, draws = corrected_mean_square(*paired)
    return _estimate(value, draws, dataset, paired[0].shape[0])


def root_mean_square(estimate: Estimate) -> Estimate:
    """The square root of a noise-corrected mean square (0 where the estimate falls below 0)."""
    return estimate.map(lambda x: np.sqrt(np.maximum(x, 0.0)))


def _signed_root(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.sqrt(np.abs(x))


def size_excess(mean_square: Estimate, reference: Estimate, margin: float) -> Estimate:
    """How far a size (root of a noise-corrected mean square) lies above a reference size plus
    ``margin``, on the squared scale: a^2 - b^2 - 2 margin b - margin^2, i.e. a^2 - (b + margin)^2,
    below 0 exactly when a < b + margin. The squares enter as their unbiased estimates; the reference
    size in the cross term as the signed root of its estimate (symmetric about 0 where the true
    size is 0, below the root of the truth otherwise), so the quantity is not pushed below its true
    value by the noise of a root (``sqrt(max(x, 0))`` would be, and "below" would hold too often)."""
    return combine(lambda a, b: a - b - 2 * margin * _signed_root(b) - margin**2, mean_square, reference)


def roughness(cd: CurveDraws, dataset: str, setting: str, proj: str, *, stat: str = "nuclear_norm") -> Estimate | None:
    """``corrected_roughness`` of one projection's curve (correct responses)."""
    samples = _positive_samples(cd, cd.condition_key(dataset, setting), proj, stat)
    if samples is None:
        return None
    value, draws = corrected_roughness(*samples)
    return _estimate(value, draws, dataset, samples[0].shape[0])


def mean_roughness(cd: CurveDraws, dataset: str, setting: str) -> Estimate | None:
    """``roughness`` averaged over q, k, v, o."""
    each = [e for e in (roughness(cd, dataset, setting, p) for p in PROJECTIONS) if e is not None]
    if len(each) < len(PROJECTIONS):
        return None
    return combine(lambda *r: np.mean(np.stack(r), axis=0), *each)


# The paper's quantity: logs of ratios of arithmetic means of nuclear norms (over instructions,
# q, k, v, o and the segment's layers), paired by instruction, with bootstrap-t intervals
# (``studentized``). Shown beside the geometric means that decide: their intervals do not keep the
# stated level at a few instructions (``scenarios``).

Term = tuple[CurveDraws, str, str, float]  # (curves, condition, segment, coefficient)


def instruction_means(
    cd: CurveDraws, condition: str, *, segment: str = "all", excluded: Iterable[int] = (), stat: str = "nuclear_norm"
) -> dict[int, float] | None:
    """Per instruction id, its mean value over q, k, v, o and the segment's layers (instructions
    with every projection's curve and positive values only); None when a projection is missing."""
    lo, hi = _segment(cd.n_layers, segment)
    per_proj = []
    for proj in PROJECTIONS:
        samples = _positive_samples(cd, condition, proj, stat, excluded=excluded)
        if samples is None:
            return None
        matrix, ids = samples[0], cd.samples[(condition, proj, stat)][1]
        ids = ids[~np.isin(ids, np.asarray(sorted(set(excluded)), dtype=int))]
        per_proj.append(dict(zip(ids.tolist(), matrix[:, lo:hi].mean(axis=1).tolist())))
    common = set.intersection(*(set(p) for p in per_proj))
    return {i: float(np.mean([p[i] for p in per_proj])) for i in sorted(common)}


def mean_ratio(terms: Sequence[Term], dataset: str, excluded: Iterable[int] = ()) -> StudentizedEstimate | None:
    """sum of coefficient x log(arithmetic mean) over ``terms``, on the instructions that every
    term has (paired), with its bootstrap-t interval; None when a term is missing or fewer than
    two instructions are shared."""
    columns = []
    for cd, condition, segment, _ in terms:
        means = instruction_means(cd, condition, segment=segment, excluded=excluded)
        if means is None:
            return None
        columns.append(means)
    shared = sorted(set.intersection(*(set(c) for c in columns)))
    if len(shared) < 2:
        return None
    matrix = np.array([[c[i] for c in columns] for i in shared])
    weights = terms[0][0].resampling.weights(dataset, np.asarray(shared, dtype=int))
    return log_mean_contrast(matrix, [t[3] for t in terms], weights, dataset)


def mean_gap(cd: CurveDraws, dataset: str, fast: str, slow: str, *, segment: str = "all") -> StudentizedEstimate | None:
    """log(arithmetic mean of ``fast`` / that of ``slow``), correct responses: the paper's ratio."""
    a, b = cd.condition_key(dataset, fast), cd.condition_key(dataset, slow)
    return mean_ratio([(cd, a, segment, 1.0), (cd, b, segment, -1.0)], dataset)


def mean_early_late(cd: CurveDraws, dataset: str, fast: str, slow: str) -> StudentizedEstimate | None:
    """The log ratio of arithmetic means of ``fast`` over ``slow`` in the early layers less that in
    the late layers (F1's second part, on the paper's quantity)."""
    a, b = cd.condition_key(dataset, fast), cd.condition_key(dataset, slow)
    terms = [(cd, a, "early", 1.0), (cd, b, "early", -1.0), (cd, a, "late", -1.0), (cd, b, "late", 1.0)]
    return mean_ratio(terms, dataset)


def mean_rd(cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()) -> StudentizedEstimate | None:
    """log(arithmetic mean over irrelevant responses / over correct ones) of a setting."""
    irrelevant, correct = (cd.condition_key(dataset, setting, r) for r in (vocabulary.IRRELEVANT, vocabulary.CORRECT))
    return mean_ratio([(cd, irrelevant, "all", 1.0), (cd, correct, "all", -1.0)], dataset, excluded)


def mean_rd_between(instruct: CurveDraws, base: CurveDraws, dataset: str) -> StudentizedEstimate | None:
    """F4 on the paper's quantity: the instruct model's Detailed log ratio of arithmetic means of
    irrelevant over correct, less its base model's, on the instructions both answered."""
    irrelevant, correct = (
        instruct.condition_key(dataset, "detailed", r) for r in (vocabulary.IRRELEVANT, vocabulary.CORRECT)
    )
    terms = [(instruct, irrelevant, "all", 1.0), (instruct, correct, "all", -1.0)]
    terms += [(base, irrelevant, "all", -1.0), (base, correct, "all", 1.0)]
    return mean_ratio(terms, dataset)


# F2 beside the log curve's roughness: is the log-scale spread of the samples the same in every
# layer? Where it is not, the arithmetic mean curve (the paper's) and the mean log curve differ by
# half the log-scale variance at each layer, and the log curve's roughness is not the paper's.


def _weighted_variance(matrix: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column variance over rows (ddof 1) of the data (L,) and under each resample's counts (R, L)."""
    n = matrix.shape[0]
    value = matrix.var(axis=0, ddof=1)
    total = weights.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (weights @ matrix) / total
        draws = ((weights @ matrix**2) / total - mean**2) * n / (n - 1)
    return value, draws


def log_variance_change(cd: CurveDraws, dataset: str, setting: str) -> Estimate | None:
    """Variance over instructions of the log values in the late layers less that in the early
    layers (correct responses, mean over q, k, v, o): zero when the log-scale spread is the same in
    every layer, the condition under which the log curve's roughness is the paper's curve's."""
    condition = cd.condition_key(dataset, setting)
    (e_lo, e_hi), (l_lo, l_hi) = _segment(cd.n_layers, "early"), _segment(cd.n_layers, "late")
    values, draws, counts = [], [], []
    for proj in PROJECTIONS:
        samples = _positive_samples(cd, condition, proj, "nuclear_norm")
        if samples is None or samples[0].shape[0] < 2:
            return None
        value, draw = _weighted_variance(np.log(samples[0]), samples[1])
        values.append(value[l_lo:l_hi].mean() - value[e_lo:e_hi].mean())
        draws.append(draw[:, l_lo:l_hi].mean(axis=1) - draw[:, e_lo:e_hi].mean(axis=1))
        counts.append(samples[0].shape[0])
    return _estimate(np.mean(values), np.mean(draws, axis=0), dataset, min(counts))


def mean_curve_roughness(matrix: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """``corrected_roughness`` of the arithmetic mean curve, relative to its level: the mean over
    layer steps of the U-statistic of raw steps (mean over pairs of distinct instructions of
    d_i d_j), over the squared mean of the curve. Value and (R,) resampled values."""
    steps = np.diff(matrix, axis=1)
    n = steps.shape[0]
    if n < 2:
        return math.nan, np.full(weights.shape[0], np.nan)
    level = matrix.mean() ** 2
    value = float(np.mean(steps.mean(axis=0) ** 2 - steps.var(axis=0, ddof=1) / n) / level)
    pairs = weights.sum(axis=1) ** 2 - (weights**2).sum(axis=1)
    products = (weights @ steps) ** 2 - weights**2 @ steps**2
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample may draw no instruction: nan
        levels = ((weights @ matrix).mean(axis=1) / weights.sum(axis=1)) ** 2
        draws = np.where(pairs > 0, products.mean(axis=1) / pairs / levels, np.nan)
    return value, draws


def mean_roughness_difference(cd: CurveDraws, dataset: str, fast: str, slow: str) -> Estimate | None:
    """``mean_curve_roughness`` of ``fast`` less that of ``slow``, averaged over q, k, v, o."""
    differences = []
    for proj in PROJECTIONS:
        samples = (_positive_samples(cd, cd.condition_key(dataset, s), proj, "nuclear_norm") for s in (fast, slow))
        pair = [p for p in samples if p is not None]
        if len(pair) < 2:
            return None
        (va, da), (vb, db) = (mean_curve_roughness(*p) for p in pair)
        differences.append(_estimate(va - vb, da - db, dataset, min(p[0].shape[0] for p in pair)))
    return combine(lambda *r: np.mean(np.stack(r), axis=0), *differences)
