"""Per-sample statistics drawn with chosen effects, as the results store holds them, and the
curves the checks read from them (``draws``): the simulator behind the checks' battery fixtures
(each check's ``battery``, ``findings.battery``), so that a fixture states its truth as effects
and never writes parts by hand.

Each condition of a dataset has a true log curve over layers (``LogCurve``, or one level for every
layer); an instruction's sample adds its instruction's level (shared by the conditions of a
dataset, so that paired contrasts cancel it), its own log level (per condition) and a little
noise per layer and projection. Per-sample statistics beyond the curves (losses, log(1 - p)) are
drawn per condition around a chosen mean; a statistic not given is not stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.core.vocabulary import PROJECTIONS
from analysis.findings.bootstrap import CurveDraws, all_curve_draws

LogCurve = Callable[[np.ndarray], np.ndarray]  # layer indices -> true log value per layer


@dataclass(frozen=True, kw_only=True)
class Condition:
    """One condition's truth: its log curve (``curve``), its per-sample log spread (None: the
    design's), and the means of the per-sample statistics it stores beyond the curves."""

    curve: LogCurve | float = 0.0
    sample_sd: float | None = None
    stats: Mapping[str, float] = field(default_factory=dict)

    def logs(self, layers: np.ndarray) -> np.ndarray:
        return np.broadcast_to(
            np.asarray(self.curve(layers) if callable(self.curve) else self.curve, float), layers.shape
        )


@dataclass(frozen=True, kw_only=True)
class SampleDesign:
    """How many instructions, layers and resamples, and the noise: the instruction's level shared by
    its conditions, each sample's own log level, the noise per layer and projection, and the spread
    of the per-sample statistics beyond the curves."""

    n: int = 30
    n_layers: int = 12
    instruction_sd: float = 0.3
    sample_sd: float = 0.1
    entry_sd: float = 0.02
    stat_sd: float = 0.5
    n_resamples: int = 200
    seed: int = 0


def wiggle(level: float, size: float) -> LogCurve:
    """A log curve about ``level`` that steps up and down from layer to layer by about ``size``."""
    return lambda layers: level + size * np.sin(1.7 * layers)


def sample_rows(
    conditions: Mapping[str, Condition], *, design: SampleDesign, model: str = "m", template: str = "base"
) -> pd.DataFrame:
    """Long rows in the store's schema, one per (condition, sample, layer, projection), of one model;
    ``conditions`` keyed "dataset/setting/responses"."""
    rng = np.random.default_rng(design.seed)
    n, layers = design.n, np.arange(design.n_layers)
    levels = {d: rng.normal(0.0, design.instruction_sd, n) for d in sorted({c.split("/")[0] for c in conditions})}
    sample, layer, proj = (a.ravel() for a in np.meshgrid(np.arange(n), layers, np.arange(4), indexing="ij"))
    pieces = []
    for key, truth in conditions.items():
        dataset, setting, responses = key.split("/")
        own = rng.normal(0.0, design.sample_sd if truth.sample_sd is None else truth.sample_sd, n)
        logs = levels[dataset][sample] + own[sample] + truth.logs(layers)[layer]
        nuclear = np.exp(logs + design.entry_sd * rng.standard_normal(sample.size))
        tokens = np.maximum(1, np.round(100 * np.exp(0.3 * rng.standard_normal(n))))[sample]
        stats = {s: (mean + design.stat_sd * rng.standard_normal(n))[sample] for s, mean in truth.stats.items()}
        pieces.append(
            pd.DataFrame(
                {
                    "model": model,
                    "dataset": dataset,
                    "setting": setting,
                    "responses": responses,
                    "condition": key,
                    "sample_index": sample,
                    "layer": layer,
                    "proj": np.array(PROJECTIONS)[proj],
                    "nuclear_norm": nuclear,
                    "frobenius": 0.5 * nuclear,
                    "n_response_tokens": tokens.astype(int),
                    "template": template,
                    "n_layers": design.n_layers,
                    **stats,
                }
            )
        )
    return pd.concat(pieces, ignore_index=True)


def draws(
    models: Mapping[str, Mapping[str, Condition]], *, design: SampleDesign, sample_stats: tuple[str, ...] = ()
) -> dict[str, CurveDraws]:
    """Every model's nuclear-norm curves under one resampling, as a page reads them from a store; ``sample_stats``: the per-sample statistics kept beside them (those not drawn are
    not stored)."""
    rows = pd.concat(
        [sample_rows(conditions, design=design, model=model) for model, conditions in models.items()],
        ignore_index=True,
    )
    stored = tuple(s for s in sample_stats if s in rows.columns)
    return all_curve_draws(
        rows,
        list(models),
        ("nuclear_norm",),
        n_resamples=design.n_resamples,
        seed=design.seed,
        sample_stats=stored,
    )
