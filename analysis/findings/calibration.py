"""How well the book's intervals and verdicts work: coverage, false-positive rate and power.

Data are simulated in the study's design (instructions nested in datasets, two settings answered
for every instruction) and passed through the same engine the book uses: resampling of
instructions within datasets (``bootstrap``), pooling over datasets and the verdict rule
(``rules.decide``). The quantity is the one most checks are built from: the log ratio of two
settings' mean values, e.g. None over Detailed CoT nuclear norm.

The simulated values are lognormal: an instruction's own level (shared by its two settings,
spread ``instruction_sd`` on the log scale) times independent noise per setting (``noise_sd``).
The defaults are near what the offline models give per instruction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.findings.bootstrap import LEVEL, Estimate, log_ratio, pooled, resample_counts, resampled_mean
from analysis.findings.rules import HOLDS, Part, decide


def _dataset_estimates(
    rng: np.random.Generator, n: int, effect: float, n_resamples: int, instruction_sd: float, noise_sd: float, name: str
) -> tuple[Estimate, Estimate]:
    level = rng.normal(0.0, instruction_sd, n)
    fast = np.exp(level + effect + rng.normal(0.0, noise_sd, n))[:, None]
    slow = np.exp(level + rng.normal(0.0, noise_sd, n))[:, None]
    counts = resample_counts(n, n_resamples, rng)
    estimates = []
    for values in (fast, slow):
        draws = resampled_mean(values, counts)[:, 0]
        estimates.append(Estimate(float(values.mean()), draws, ((name, n),)))
    return estimates[0], estimates[1]


def simulate(
    n: int,
    n_datasets: int = 1,
    effect: float = 0.0,
    reps: int = 400,
    n_resamples: int = 1000,
    instruction_sd: float = 0.2,
    noise_sd: float = 0.2,
    level: float = LEVEL,
    seed: int = 0,
) -> dict:
    """Coverage of the true log ratio and the share of "holds" verdicts for "log ratio > 0".

    ``n`` instructions in each of ``n_datasets`` datasets; ``effect`` is the true log ratio of the
    two settings' means in every dataset.
    """
    rng = np.random.default_rng(seed)
    covered = holds = 0
    for _ in range(reps):
        ratios = []
        for h in range(n_datasets):
            fast, slow = _dataset_estimates(rng, n, effect, n_resamples, instruction_sd, noise_sd, f"d{h}")
            ratios.append(log_ratio(fast, slow))
        estimate = pooled(ratios)
        low, high = estimate.interval(level)
        covered += bool(low <= effect <= high)
        holds += decide([Part("log ratio", estimate, "above", 0.0)], level) == HOLDS
    return {
        "n": n,
        "datasets": n_datasets,
        "effect": effect,
        "reps": reps,
        "coverage": covered / reps,
        "holds": holds / reps,
    }


def coverage_table(
    ns: Sequence[int] = (5, 10, 20),
    designs: Sequence[tuple[int, int]] = ((5, 2), (5, 6)),
    reps: int = 400,
    n_resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Coverage of the 95% interval for one dataset of n instructions and for pooled designs
    (instructions per dataset, datasets)."""
    rows = [simulate(n, 1, 0.2, reps, n_resamples, seed=seed + n) for n in ns]
    rows += [simulate(n, h, 0.2, reps, n_resamples, seed=seed + 100 * h + n) for n, h in designs]
    table = pd.DataFrame(rows)
    table["instructions"] = table["n"] * table["datasets"]
    return table[["n", "datasets", "instructions", "reps", "coverage"]]


def power_table(
    effects: Sequence[float] = (0.0, 0.1, 0.2, 0.4),
    n: int = 5,
    n_datasets: int = 6,
    reps: int = 400,
    n_resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Share of "holds" verdicts at each true effect (log ratio) in a pooled design: the
    false-positive rate at effect 0 (nominal: 2.5%, one side of a 95% interval), power above it."""
    rows = [simulate(n, n_datasets, e, reps, n_resamples, seed=seed + i) for i, e in enumerate(effects)]
    table = pd.DataFrame(rows)
    table["ratio"] = np.exp(table["effect"])
    return table[["n", "datasets", "effect", "ratio", "reps", "holds"]]
