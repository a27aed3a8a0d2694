"""How much the random-sign estimate of the token energy biases its log, and which estimates the
split of a gap into token size and alignment leaves out.

With more response tokens R than passes K, the store keeps E^ = (1/K) sum_k ||sum_r eps_kr g_r||_F^2,
unbiased for the token energy E, and its variance estimate (the K values' sample variance over K).
The log of E^ is biased down. Model of one row: each pass a Gaussian quadratic form (a random-sign
sum of many token gradients is close to Gaussian) of relative variance K v, where v = Var(E^) / E^2
is the row's own; then E^ / E is Gamma distributed with shape 1 / v and

    E log(E^ / E) = digamma(1 / v) + log v,

which lies between 0 (v -> 0) and digamma(K / 2) - log(K / 2) (-0.27 at K = 4), reached where
every token gradient points along one direction (v = 2 / K, its largest value: a larger stored
estimate is the sample variance's own noise, and is clipped). The random-sign estimator itself
matches this model (a simulation in the tests). An estimate of exactly 0 (or a non-finite
one) has no finite log: the split leaves that sample out and this module counts it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import digamma

ENERGY, VARIANCE, EXACT = "token_energy", "token_energy_variance", "token_energy_exact"


def log_bias(relative_variance: np.ndarray, *, passes: int) -> np.ndarray:
    """E log(E^ / E) of estimates of relative variance ``relative_variance`` (Var E^ / E^2) made of
    ``passes`` random-sign passes, the variance clipped to its largest possible value 2 / K."""
    v = np.clip(np.asarray(relative_variance, dtype=float), 0.0, 2.0 / passes)
    with np.errstate(divide="ignore", invalid="ignore"):
        bias = digamma(1.0 / v) + np.log(v)
    return np.where(v > 0, bias, 0.0)


def energy_noise_table(rows: pd.DataFrame, *, passes: int) -> pd.DataFrame:
    """Per model and condition that holds the token energy: rows estimated (of all), estimates of
    exactly 0 or not finite (left out of the split), and the mean, median and largest log bias of
    the estimated rows (``log_bias``) with the mean over all rows (exact ones add 0), by which the
    condition's token size (1/2 log E) is low on average: half that mean."""
    columns = [
        "model",
        "condition",
        "rows",
        "estimated",
        "zero or not finite",
        "mean log bias",
        "median",
        "worst",
        "token size low by",
    ]
    if rows.empty or ENERGY not in rows or rows[ENERGY].isna().all():
        return pd.DataFrame(columns=columns)
    held = rows[rows[ENERGY].notna()]
    out = []
    for (model, condition), group in held.groupby(["model", "condition"], sort=False, observed=True):
        energy = group[ENERGY].to_numpy(float)
        estimated = group[EXACT].to_numpy(float) == 0 if EXACT in group else np.zeros(len(group), bool)
        variance = group[VARIANCE].to_numpy(float) if VARIANCE in group else np.zeros(len(group))
        usable = np.isfinite(energy) & (energy > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            bias = np.where(estimated & usable, log_bias(variance / energy**2, passes=passes), 0.0)
        of_estimates = bias[estimated & usable]
        mean_all = float(bias[usable].mean()) if usable.any() else np.nan
        out.append(
            {
                "model": model,
                "condition": condition,
                "rows": len(group),
                "estimated": int(estimated.sum()),
                "zero or not finite": int((~usable).sum()),
                "mean log bias": float(of_estimates.mean()) if of_estimates.size else 0.0,
                "median": float(np.median(of_estimates)) if of_estimates.size else 0.0,
                "worst": float(of_estimates.min()) if of_estimates.size else 0.0,
                "token size low by": -0.5 * mean_all,
            }
        )
    return pd.DataFrame(out, columns=columns)
