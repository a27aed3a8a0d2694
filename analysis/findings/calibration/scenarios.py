"""The stated level where it is hard: one-sided misses of the book's intervals under harder noise.

``book/methods.md`` promises that a 95% interval misses the truth at most 2.5% of the time on each
side (so that a "holds" is wrong at most 2.5% of the time). ``calibration`` measures that in the
study's design with log-normal noise; here the same functions meet noise that makes it hard:
log-normal with a spread of 0.5, 1 and 1.5 on the log scale, skewed logs (centred gamma noise of
skewness 1, and of skewness 2, an exponential, and their mirror images, skewness -1 and -2), logs with t-distributed noise of 3 degrees of freedom, a family with one dataset four times
noisier than the others, datasets of unequal size, a sample's noise correlated across layers
(AR(1) with 0.9) and noise whose spread grows across the layers.

A sample's noise is half shared by its layers and half its own at each layer (a correlation of 0.5
between layers), unless a scenario says otherwise. Five intervals are measured on the same runs:

- ``geometric``: the mean log difference of a noisy fast and a quiet slow setting over all layers
  (the log ratio of geometric means, paired by instruction) with the book's t interval (F1, F3,
  F4, L, L2 decide on it);
- ``geometric bootstrap-t``: the same quantity with a bootstrap-t interval
  (``studentized.mean_contrast``), the alternative for skewed logs;
- ``arithmetic t``: the paper's quantity, the log ratio of arithmetic means, with the same t
  interval on its bootstrap spread;
- ``arithmetic bootstrap-t``: the same quantity with a bootstrap-t interval
  (``studentized.log_mean_contrast``, Welch-pooled over datasets by ``pooled_studentized``);
- ``roughness``: the noise-corrected roughness difference of F2 and F5 (fast minus slow);
- ``mean-curve roughness``: the same for the arithmetic mean curve relative to its level
  (``quantities.mean_curve_roughness``), shown beside F2.

The truth of each is known: the geometric quantity's is the true effect with the true curves'
mean difference (the noise is centred on the log scale), the arithmetic one's the log of the ratio of the true means, averaged over layers,
from the noise's moment generating function (none for t noise of 3 degrees of freedom, whose
values have no finite mean), the roughness difference's from the true curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core import processes
from analysis.findings.bootstrap import LEVEL, Estimate, pooled, resample_counts
from analysis.findings.calibration.designs import N_LAYERS, _true_curve, true_roughness
from analysis.findings.calibration.rule import PROMISED
from analysis.findings.quantities import corrected_roughness, mean_curve_roughness
from analysis.findings.studentized import log_mean_contrast, mean_contrast, pooled_studentized

EFFECT = 0.2  # true log difference of fast over slow (geometric)
WIGGLE_FAST, WIGGLE_SLOW = 0.2, 0.1  # true log curves of the roughness difference
INTERVALS = (
    "geometric",
    "geometric bootstrap-t",
    "arithmetic t",
    "arithmetic bootstrap-t",
    "roughness",
    "mean-curve roughness",
)
SHARED = 0.5  # share of a sample's noise variance common to all its layers


@dataclass(frozen=True)
class Scenario:
    """Noise of a simulated run. ``counts`` and ``fast_sd`` per dataset; the slow setting's spread
    is ``slow_ratio`` times the fast one's; ``noise`` "normal", "skewed" (centred gamma of
    skewness 1), "skewed2" (centred exponential, skewness 2), either with a leading "-" (mirrored:
    skewness -1, -2) or "t3" (t with 3 df), scaled to unit
    variance; ``rho`` None for noise ``SHARED`` by the layers and their own in equal parts, else the
    correlation of a sample's noise from one layer to the next (AR(1), normal noise); ``trend`` how much the fast spread grows across the layers
    (from 1 - trend to 1 + trend times ``fast_sd``)."""

    counts: tuple[int, ...] = (5,)
    fast_sd: tuple[float, ...] = (1.0,)
    slow_ratio: float = 0.25
    noise: str = "normal"
    rho: float | None = None
    trend: float = 0.0
    instruction_sd: float = 0.3

    def layer_sd(self, sd: float) -> np.ndarray:
        return sd * (1 + self.trend * np.linspace(-1.0, 1.0, N_LAYERS))


def scenarios(n: int = 5) -> dict[str, Scenario]:
    """The scenarios of the review, at ``n`` instructions per dataset."""
    return {
        "log-normal 0.5": Scenario((n,), (0.5,)),
        "log-normal 1": Scenario((n,), (1.0,)),
        "log-normal 1.5": Scenario((n,), (1.5,)),
        "skewed logs": Scenario((n,), (1.0,), noise="skewed"),
        "strongly skewed logs": Scenario((n,), (0.8,), noise="skewed2"),
        "t, 3 df": Scenario((n,), (1.0,), noise="t3"),
        "one dataset 4x noisier": Scenario((n,) * 4, (0.6, 0.6, 0.6, 2.4)),
        "unequal n": Scenario((n, n, 2 * n, 4 * n), (1.0, 1.0, 1.0, 1.0)),
        "layers AR(1) 0.9": Scenario((n,), (1.0,), rho=0.9),
        "noise varies across layers": Scenario((n,), (1.0,), trend=0.8),
        # last, so that the scenarios before them keep their seeds
        "left-skewed logs": Scenario((n,), (1.0,), noise="-skewed"),
        "strongly left-skewed logs": Scenario((n,), (0.8,), noise="-skewed2"),
    }


def _innovations(rng, scenario: Scenario, size: tuple[int, int]) -> np.ndarray:
    if scenario.noise.startswith("-"):  # the mirror image: skewed to the left
        return -_innovations(rng, Scenario(noise=scenario.noise[1:]), size)
    if scenario.noise == "normal":
        return rng.standard_normal(size)
    if scenario.noise == "skewed":
        return (rng.gamma(4.0, 1.0, size) - 4.0) / 2.0
    if scenario.noise == "skewed2":
        return rng.exponential(1.0, size) - 1.0
    if scenario.noise == "t3":
        return rng.standard_t(3, size) / math.sqrt(3.0)
    raise ValueError(f"unknown noise {scenario.noise!r}")


def _noise(rng, scenario: Scenario, n: int) -> np.ndarray:
    """(n, layers) unit-variance noise: shared by a sample's layers and its own at each in equal
    parts, or an AR(1) over the layers."""
    if scenario.rho is None:
        shared = _innovations(rng, scenario, (n, 1))
        return math.sqrt(SHARED) * shared + math.sqrt(1 - SHARED) * _innovations(rng, scenario, (n, N_LAYERS))
    e = _innovations(rng, scenario, (n, N_LAYERS))
    out = np.empty_like(e)
    out[:, 0] = e[:, 0]
    scale = math.sqrt(1 - scenario.rho**2)
    for layer in range(1, N_LAYERS):
        out[:, layer] = scenario.rho * out[:, layer - 1] + scale * e[:, layer]
    return out


def _component_log_mgf(noise: str, s: np.ndarray) -> np.ndarray:
    """log E[exp(s x)] of one unit-variance innovation x (inf where it has none)."""
    s = np.asarray(s, dtype=float)
    if noise.startswith("-"):  # E[exp(s (-x))] = E[exp(-s x)]
        return _component_log_mgf(noise[1:], -s)
    if noise == "normal":
        return s**2 / 2
    k = {"skewed": 4.0, "skewed2": 1.0}.get(noise)
    if k is None:
        return np.full(s.shape, np.inf)
    root = math.sqrt(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s < root, -s * root - k * np.log1p(-np.minimum(s, 0.999999 * root) / root), np.inf)


def _log_mgf(scenario: Scenario, sd: np.ndarray) -> np.ndarray:
    """log E[exp(sd x)] of a sample's noise x at each layer's spread (inf where none): the two
    parts' when shared and own, a normal's for the AR(1) (its marginal is standard normal)."""
    if scenario.rho is not None:
        return np.asarray(sd, dtype=float) ** 2 / 2
    return _component_log_mgf(scenario.noise, math.sqrt(SHARED) * sd) + _component_log_mgf(
        scenario.noise, math.sqrt(1 - SHARED) * sd
    )


def arithmetic_truth(scenario: Scenario, sd: float, effect: float = EFFECT) -> float:
    """log of (mean over layers of the fast setting's true mean) over (the slow one's): the
    instructions' own levels cancel (they are shared); NaN where the values have no finite mean."""
    layers = np.arange(N_LAYERS)
    fast = _log_mgf(scenario, scenario.layer_sd(sd)) + effect + _true_curve(layers, WIGGLE_FAST)
    slow = _log_mgf(scenario, np.full(N_LAYERS, sd * scenario.slow_ratio)) + _true_curve(layers, WIGGLE_SLOW)
    if not (np.all(np.isfinite(fast)) and np.all(np.isfinite(slow))):
        return math.nan
    return float(math.log(np.mean(np.exp(fast)) / np.mean(np.exp(slow))))


def _relative_roughness(curve: np.ndarray) -> float:
    return float(np.mean(np.diff(curve) ** 2) / np.mean(curve) ** 2)


def mean_curve_truth(scenario: Scenario, sd: float) -> float:
    """Relative roughness of the fast setting's true arithmetic mean curve less the slow one's (the
    instructions' own levels cancel); NaN where the values have no finite mean."""
    layers = np.arange(N_LAYERS)
    fast = _log_mgf(scenario, scenario.layer_sd(sd)) + EFFECT + _true_curve(layers, WIGGLE_FAST)
    slow = _log_mgf(scenario, np.full(N_LAYERS, sd * scenario.slow_ratio)) + _true_curve(layers, WIGGLE_SLOW)
    if not (np.all(np.isfinite(fast)) and np.all(np.isfinite(slow))):
        return math.nan
    return _relative_roughness(np.exp(fast)) - _relative_roughness(np.exp(slow))


def _one_run(rng, scenario: Scenario, n_resamples: int, intervals: tuple[str, ...] = INTERVALS) -> dict[str, Estimate]:
    """The estimates of one simulated run (pooled over the scenario's datasets); the data are
    drawn the same whichever ``intervals`` are computed."""
    layers = np.arange(N_LAYERS)
    geometric, geometric_bt, arithmetic_t, arithmetic_bt, rough, mean_rough = [], [], [], [], [], []
    for h, (n, sd) in enumerate(zip(scenario.counts, scenario.fast_sd)):
        level = rng.normal(0.0, scenario.instruction_sd, (n, 1))
        fast_logs = level + EFFECT + _true_curve(layers, WIGGLE_FAST) + scenario.layer_sd(sd) * _noise(rng, scenario, n)
        slow_logs = level + _true_curve(layers, WIGGLE_SLOW) + sd * scenario.slow_ratio * _noise(rng, scenario, n)
        weights = resample_counts(n, n_resamples, rng)
        strata = ((f"d{h}", n),)
        logs = fast_logs.mean(axis=1) - slow_logs.mean(axis=1)
        geometric.append(Estimate(float(logs.mean()), weights @ logs / n, strata))
        if "geometric bootstrap-t" in intervals:
            geometric_bt.append(mean_contrast(logs[:, None], (1.0,), weights, f"d{h}"))
        fast, slow = np.exp(fast_logs).mean(axis=1), np.exp(slow_logs).mean(axis=1)
        if "arithmetic t" in intervals:
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = np.log((weights @ fast) / (weights @ slow))
            arithmetic_t.append(Estimate(float(math.log(fast.mean() / slow.mean())), draws, strata))
        if "arithmetic bootstrap-t" in intervals:
            arithmetic_bt.append(log_mean_contrast(np.column_stack([fast, slow]), (1.0, -1.0), weights, f"d{h}"))
        if "mean-curve roughness" in intervals:
            (va, da), (vb, db) = (mean_curve_roughness(np.exp(x), weights) for x in (fast_logs, slow_logs))
            mean_rough.append(Estimate(va - vb, da - db, strata))
        if "roughness" not in intervals:
            continue
        (vf, df_), (vs, ds) = (
            corrected_roughness(np.exp(fast_logs), weights),
            corrected_roughness(np.exp(slow_logs), weights),
        )
        rough.append(Estimate(vf - vs, df_ - ds, strata))
    found = {
        "geometric": pooled(geometric),
        "geometric bootstrap-t": pooled_studentized(geometric_bt),
        "arithmetic t": pooled(arithmetic_t),
        "arithmetic bootstrap-t": pooled_studentized(arithmetic_bt),
        "roughness": pooled(rough),
        "mean-curve roughness": pooled(mean_rough),
    }
    chosen = {key: estimate for key in intervals if (estimate := found[key]) is not None}
    assert len(chosen) == len(set(intervals)), "a scenario has at least one dataset"
    return chosen


def truths(scenario: Scenario) -> dict[str, float]:
    """The true value of each interval's quantity (the pooled mean over the datasets)."""
    arithmetic = float(np.mean([arithmetic_truth(scenario, sd) for sd in scenario.fast_sd]))
    layers = np.arange(N_LAYERS)
    geometric = EFFECT + float(np.mean(_true_curve(layers, WIGGLE_FAST) - _true_curve(layers, WIGGLE_SLOW)))
    return {
        "geometric": geometric,
        "geometric bootstrap-t": geometric,
        "arithmetic t": arithmetic,
        "arithmetic bootstrap-t": arithmetic,
        "roughness": true_roughness(WIGGLE_FAST) - true_roughness(WIGGLE_SLOW),
        "mean-curve roughness": float(np.mean([mean_curve_truth(scenario, sd) for sd in scenario.fast_sd])),
    }


def miss_table(
    n: int = 5,
    names: tuple[str, ...] | None = None,
    intervals: tuple[str, ...] = INTERVALS,
    *,
    reps: int = 2000,
    n_resamples: int = 400,
    seed: int = 0,
    level: float = LEVEL,
) -> pd.DataFrame:
    """One row per scenario and interval: how often the 95% interval lies wholly above the truth
    ("miss below": a false "holds" for a claim that the quantity exceeds its true value) and wholly
    below it, each with its Monte Carlo standard error, and whether both are within the promised
    2.5% (allowing two standard errors): ``reps`` simulated runs of ``n_resamples`` bootstrap
    resamples, from ``seed``, intervals at ``level``."""
    jobs = [
        {"name": name, "scenario": scenario, "intervals": intervals, "reps": reps, "n_resamples": n_resamples}
        | {"seed": [seed, i], "level": level}
        for i, (name, scenario) in enumerate(scenarios(n).items())
        if names is None or name in names
    ]
    rows = [row for found in processes.each(_scenario_misses, jobs) for row in found]
    return pd.DataFrame(rows)


def _scenario_misses(
    *,
    name: str,
    scenario: Scenario,
    intervals: tuple[str, ...],
    reps: int,
    n_resamples: int,
    seed: list[int],
    level: float,
) -> list[dict]:
    """``miss_table``'s rows of one scenario, one per interval, from its own seed."""
    rng = np.random.default_rng(seed)
    truth = truths(scenario)
    below = dict.fromkeys(intervals, 0)
    above = dict.fromkeys(intervals, 0)
    for _ in range(reps):
        for key, estimate in _one_run(rng, scenario, n_resamples, intervals).items():
            low, high = estimate.interval(level)
            below[key] += bool(truth[key] < low)
            above[key] += bool(truth[key] > high)
    rows = []
    for key in intervals:
        defined = np.isfinite(truth[key])
        se = math.sqrt(PROMISED * (1 - PROMISED) / reps)
        rows.append(
            {
                "scenario": name,
                "interval": key,
                "instructions": "/".join(map(str, scenario.counts)),
                "reps": reps,
                "miss below": below[key] / reps if defined else math.nan,
                "miss above": above[key] / reps if defined else math.nan,
                "MC s.e.": se,
                "within 2.5%": bool(defined and max(below[key], above[key]) / reps <= PROMISED + 2 * se),
            }
        )
    return rows
