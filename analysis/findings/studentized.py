"""Logs of ratios of arithmetic means (the paper's quantity) with bootstrap-t intervals.

The paper compares arithmetic means of nuclear norms. A contrast of logs of such means,
theta = sum_k c_k log(mean_i x_ki) (e.g. log(mean fast / mean slow) over the same instructions),
is a smooth function of means whose skew does not vanish at small n, so a plain t interval on its
bootstrap spread misses more on one side than the other (``calibration.log_ratio_coverage_table``). Its
bootstrap-t interval studentizes each resample by its own delta-method standard error, from the
instructions' influence values z_i = sum_k c_k x_ki / mean_k, and takes the interval from the
quantiles of those studentized draws. Datasets are pooled as in ``bootstrap.pooled``: the mean of
the datasets' values, its standard error and every resample's from the datasets' own (a
studentized stratified bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.findings.bootstrap import LEVEL, Estimate, _merged_strata, pooled


@dataclass(frozen=True)
class StudentizedEstimate(Estimate):
    """An ``Estimate`` whose interval is a bootstrap-t interval: ``se`` the delta-method standard
    error of the value, ``se_draws`` each resample's own."""

    se: float = math.nan
    se_draws: np.ndarray | None = None

    def t_draws(self) -> np.ndarray:
        """Each resample's (draw - value) / its own standard error; NaN for a resample with no
        spread and no difference (one instruction repeated)."""
        draws = np.asarray(self.draws, dtype=float)
        se = np.asarray(self.se_draws if self.se_draws is not None else np.full(draws.shape, np.nan), dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (draws - self.value) / se
        t[(se == 0) & (draws == self.value)] = np.nan
        return t

    def standard_error(self) -> float:
        return self.se

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """value - q(1 - a/2) se, value - q(a/2) se, q the quantiles of the studentized draws
        (NaN where over half of them are undefined)."""
        t = self.t_draws()
        kept = t[~np.isnan(t)]
        if not (np.isfinite(self.value) and np.isfinite(self.se)) or kept.size < max(2, 0.5 * t.size):
            return math.nan, math.nan
        if self.se == 0:  # no spread at all (e.g. two identical models): a zero-width interval
            return float(self.value), float(self.value)
        alpha = 1 - level
        low_q, high_q = np.quantile(kept, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
        return float(self.value - high_q * self.se), float(self.value - low_q * self.se)


def _influence_se(
    columns: np.ndarray, coefficients: np.ndarray, weights: np.ndarray | None, logs: bool = True
) -> tuple:
    """(value, se) of the contrast for the instructions counted by ``weights`` (R, n) or, with
    None, for the data themselves; ``columns`` (n, K) per-instruction values (positive with
    ``logs``: a contrast of logs of means; else a contrast of means)."""
    n = columns.shape[0]
    w = np.ones((1, n)) if weights is None else weights
    total = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (w @ columns) / total  # (R, K)
        if logs:
            value = np.log(means) @ coefficients
            z = (columns[None, :, :] / means[:, None, :]) @ coefficients  # (R, n)
        else:
            value = means @ coefficients
            z = np.broadcast_to(columns @ coefficients, (w.shape[0], n))
        mean_z = (w * z).sum(axis=1) / total[:, 0]
        variance = ((w * z**2).sum(axis=1) / total[:, 0] - mean_z**2) * n / (n - 1)
        se = np.sqrt(np.maximum(variance, 0.0) / n)
    return value, se


def log_mean_contrast(
    columns: np.ndarray, coefficients: Sequence[float], weights: np.ndarray, dataset: str
) -> StudentizedEstimate | None:
    """sum_k c_k log(mean over instructions of column k), with its bootstrap-t interval; the
    instructions (rows) resampled by ``weights`` (R, n). None for fewer than two instructions or
    values that are not all positive."""
    columns = np.asarray(columns, dtype=float)
    c = np.asarray(coefficients, dtype=float)
    n = columns.shape[0]
    if n < 2 or not np.all(columns > 0):
        return None
    (value,), (se,) = _influence_se(columns, c, None)
    draws, se_draws = _influence_se(columns, c, weights)
    return StudentizedEstimate(float(value), draws, ((dataset, n),), None, False, float(se), se_draws)


def pooled_studentized(estimates: Sequence[StudentizedEstimate | None]) -> StudentizedEstimate | None:
    """The mean of the datasets' contrasts, each dataset weighing the same, with a studentized
    stratified bootstrap interval (each resample's standard error from the datasets' own)."""
    present = [e for e in estimates if e is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    h = len(present)
    each_se_draws = [e.se_draws for e in present if e.se_draws is not None]
    assert len(each_se_draws) == h, "every contrast of this module keeps its resamples' standard errors"
    value = float(np.mean([e.value for e in present]))
    draws = np.mean(np.stack([e.draws for e in present]), axis=0)
    se = math.sqrt(sum(e.se**2 for e in present)) / h
    se_draws = np.sqrt(sum(d**2 for d in each_se_draws)) / h
    strata = _merged_strata(present)
    variances = tuple(e.se**2 / h**2 for e in present) if len(strata) == len(present) else None
    return StudentizedEstimate(value, draws, strata, variances, False, se, se_draws)


def mean_contrast(
    columns: np.ndarray, coefficients: Sequence[float], weights: np.ndarray, dataset: str
) -> StudentizedEstimate | None:
    """sum_k c_k mean over instructions of column k (e.g. a mean log difference) with its
    bootstrap-t interval: measured beside the book's t interval (``scenarios``)."""
    columns = np.asarray(columns, dtype=float)
    c = np.asarray(coefficients, dtype=float)
    n = columns.shape[0]
    if n < 2 or not np.all(np.isfinite(columns)):
        return None
    (value,), (se,) = _influence_se(columns, c, None, logs=False)
    draws, se_draws = _influence_se(columns, c, weights, logs=False)
    return StudentizedEstimate(float(value), draws, ((dataset, n),), None, False, float(se), se_draws)


def pool_any(estimates: Sequence[Estimate | None]) -> Estimate | None:
    """``pooled_studentized`` where every estimate is studentized, else ``bootstrap.pooled``."""
    present = [e for e in estimates if e is not None]
    studentized = [e for e in present if isinstance(e, StudentizedEstimate)]
    if present and len(studentized) == len(present):
        return pooled_studentized(studentized)
    return pooled(present)
