"""The paired line of a gap on a covariate's gap over instructions, with its resampled draws: its
intercept is the gap where the covariate is equal on both sides (the answer's loss for the reasoning
step's "equal answer loss", the scored tokens' loss for each step of the split).
"""

from __future__ import annotations

import numpy as np

from analysis.findings.bootstrap import Estimate

# A resample whose covariate gaps spread less than this share of the observed spread (their variance)
# leaves the line undetermined: its intercept is NaN, not an extreme value that decides the interval.
DEGENERATE = 0.05


def weighted_intercepts(y: np.ndarray, x: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intercepts and slopes of the least-squares line of ``y`` on ``x`` under each row of ``weights``
    (resample counts, (R, n)): (R,) each; NaN where a resample's x spread less than ``DEGENERATE``
    times the observed (all equal, or nearly)."""
    total = weights.sum(axis=1)
    x_mean, y_mean = (weights @ x) / total, (weights @ y) / total
    dx, dy = x[None, :] - x_mean[:, None], y[None, :] - y_mean[:, None]
    spread = (weights * dx * dx).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (weights * dx * dy).sum(axis=1) / spread
    degenerate = spread / total < DEGENERATE * float(np.var(x))
    slope[degenerate] = np.nan
    return y_mean - slope * x_mean, slope


def equal_loss_regression(y: np.ndarray, x: np.ndarray, weights: np.ndarray, dataset: str) -> tuple[Estimate, Estimate]:
    """The intercept and the slope of the paired regression of the gap ``y`` on the covariate's gap
    ``x`` (one value per instruction), each with its draws under the resample counts ``weights``."""
    (intercept,), (slope,) = weighted_intercepts(y, x, np.ones((1, y.size)))
    intercepts, slopes = weighted_intercepts(y, x, weights)
    strata = ((dataset, int(y.size)),)
    return (
        Estimate(float(intercept), intercepts, strata, parameters=2),
        Estimate(float(slope), slopes, strata, parameters=2),
    )
