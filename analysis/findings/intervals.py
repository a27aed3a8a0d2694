"""The intervals the study's estimates carry: a value plus or minus a t quantile times a
bias-corrected bootstrap standard error, a Wilson score interval for a share in [0, 1], and per-layer
bands of a mean curve. ``analysis.findings.bootstrap`` builds the estimates and their variances.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import special

LEVEL = 0.95


def t_quantile(df: float, level: float) -> float:
    """The two-sided t quantile of ``level`` at ``df`` degrees of freedom (``scipy.special.stdtrit``,
    what ``scipy.stats.t.ppf`` computes, without its checks of its arguments: it runs for every
    interval of every simulated run)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return float(special.stdtrit(df, 1 - (1 - level) / 2))


def interval_half_width(draws: np.ndarray, n: int, df: float, level: float = LEVEL) -> float:
    """Half the width of the interval: sqrt(n / (n - 1)) * t(df) * standard deviation of the draws.

    The bootstrap spread of a mean over n instructions is exactly sqrt((n - 1) / n) times its
    standard error; the factor undoes that, and t quantiles with ``df`` degrees of freedom account
    for a spread estimated from few instructions. NaN when over half the draws are undefined.
    """
    quantile = t_quantile(max(df, 1e-9), level)
    draws = np.asarray(draws, dtype=float)
    finite = draws[np.isfinite(draws)]
    if n < 2 or df < 1 or finite.size < 2 or finite.size < 0.5 * draws.size:
        return math.nan
    return float(math.sqrt(n / (n - 1)) * quantile * finite.std(ddof=1))


def t_interval(value: float, draws: np.ndarray, n: int, df: float, *, level: float = LEVEL) -> tuple[float, float]:
    """(low, high): the value plus or minus ``interval_half_width``; NaN when undefined."""
    half = interval_half_width(draws, n, df, level)
    if not (np.isfinite(value) and np.isfinite(half)):
        return math.nan, math.nan
    return float(value - half), float(value + half)


def wilson_interval(value: float, standard_error: float, n: int, quantile: float) -> tuple[float, float]:
    """Wilson score interval of a share in [0, 1] whose standard error is ``standard_error``.

    The effective number of trials is the one that gives that standard error,
    p (1 - p) / se^2, and ``n`` (the instructions) where that is undefined (a share of 0 or 1,
    or no spread): an accuracy of 10 out of 10 gets an interval below 1, never [1, 1].
    """
    p = float(np.clip(value, 0.0, 1.0))
    trials = p * (1 - p) / standard_error**2 if standard_error > 0 and 0 < p < 1 else float(n)
    if not trials > 0:
        return math.nan, math.nan
    z2 = quantile**2
    center = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = quantile / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2))
    return float(max(0.0, center - half)), float(min(1.0, center + half))


def t_band(values: np.ndarray, draws: np.ndarray, n: int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer intervals of a mean curve (L,) from its draws (R, L), one dataset of n instructions."""
    if n < 2:
        nan = np.full(np.shape(values), np.nan)
        return nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # layers undefined in every resample
        spread = np.nanstd(draws, axis=0, ddof=1)
    half = math.sqrt(n / (n - 1)) * t_quantile(n - 1, level) * spread
    return values - half, values + half


def nonnegative(value: float, low: float, high: float) -> tuple[float, float, float]:
    """(value, low, high) of a quantity that cannot be negative (a MAD, a mean |RD|): the low end
    clipped at 0, where a symmetric t interval of a few instructions would reach below it."""
    return value, (max(0.0, low) if np.isfinite(low) else low), high
