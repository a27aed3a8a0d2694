"""The book's one bootstrap engine: resampled mean layer curves and intervals that hold their level.

Instructions are the unit of resampling. The conditions of one dataset share their instructions
(the same questions under every setting, with correct and irrelevant responses, and on every
model), so one resampling of a dataset's instruction ids serves all of them: a difference between
settings, between response types or between two models is computed inside each resample and its
interval keeps the pairing. Datasets are resampled independently of each other, which makes a
quantity averaged over the datasets of a family a stratified bootstrap.

Intervals are t intervals on the bootstrap standard error, derived rather than tuned: the
bootstrap variance of a mean over n instructions is exactly (n - 1) / n times its sampling
variance, so each dataset's bootstrap variance is multiplied by n / (n - 1); the t quantile takes
the Welch-Satterthwaite degrees of freedom of the datasets behind the quantity (n - 1 for one
dataset), so that a pooled family with one noisy small dataset is not credited with the
instructions of the others. A family's value is the mean over the datasets it names, conditional
on them (the paper's claims are about its datasets): its interval carries the datasets' own
sampling noise and nothing else, so it says nothing of other datasets of the family (the calibration
measures its coverage where the datasets' true values differ). Shares in [0, 1] (AUROC, accuracy) get a Wilson score interval, which
stays inside [0, 1]. Skewed values are handled where the quantities are built: the checks work on
the logs of per-sample values (``analysis.findings.rules``). ``analysis.findings.calibration``
measures coverage, false "holds" and power of this engine in the study's design.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.core.memory import release_freed_memory
from analysis.core.vocabulary import PROJECTIONS
from analysis.extract.screens import Screen
from analysis.findings import metrics
from analysis.findings.intervals import LEVEL, t_interval, t_quantile, wilson_interval

# Fewest instructions of each dataset behind a quantity for a verdict. A bootstrap over fewer
# instructions (35 distinct resamples at 4) is not relied on; from 5 on, coverage and false
# "holds" are measured by tests/test_calibration.py.
MIN_VERDICT_SAMPLES = 5


def _variance(draws: np.ndarray) -> float:
    finite = np.asarray(draws, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.var(ddof=1)) if finite.size > 1 else math.nan


@dataclass(frozen=True)
class Estimate:
    """A scalar quantity: its value on the data, its values under each resample, and the
    instructions behind it per dataset (the strata of the bootstrap).

    ``variances`` (aligned with ``strata``) are the parts of the draws' variance that each
    dataset's resampling contributes, in relative terms; ``None`` for one dataset, or equal parts.
    ``bounded``: the quantity is a share in [0, 1] (an AUROC, an accuracy), whose interval is a
    Wilson score interval and stays inside [0, 1].
    ``null``: the quantity recomputed under the permutations of the data that make its claim false
    (G1's sign flips of whole pairs: every distinct one, or random ones); where given, ``draws`` are
    its values under a fixed number of random permutations (what ``pooled`` averages: the null
    itself where that is random), the estimate has no interval, and a part on it decides by its
    one-sided permutation p-value (``p_value``).
    ``parameters``: how many parameters each dataset's value is fitted with (1 for a mean, 2 for the
    intercept of a line): its bootstrap variance is multiplied by n / (n - parameters) and its t
    quantile takes n - parameters degrees of freedom.
    """

    value: float
    draws: np.ndarray
    strata: tuple[tuple[str, int], ...]  # (dataset, instructions) pairs
    variances: tuple[float, ...] | None = None
    bounded: bool = False
    _: KW_ONLY
    null: np.ndarray | None = None
    parameters: int = 1

    def p_value(self) -> float:
        """One-sided permutation p-value, (1 + number of null values at or above the value) /
        (1 + number of null values); NaN without a null."""
        if self.null is None or not np.isfinite(self.value):
            return math.nan
        null = np.asarray(self.null, dtype=float)
        return float((1 + np.sum(null >= self.value - 1e-12)) / (1 + null.size))

    @property
    def n(self) -> int:
        """Instructions behind the quantity, over all its datasets."""
        return int(sum(n for _, n in self.strata))

    @property
    def n_smallest(self) -> int:
        """Instructions of the dataset with the fewest: the minimum for a verdict applies to it."""
        return int(min((n for _, n in self.strata), default=0))

    def stratum_variances(self) -> np.ndarray:
        """Each dataset's part of the draws' variance, scaled to sum to that variance."""
        total = _variance(self.draws)
        weights = np.ones(len(self.strata)) if self.variances is None else np.asarray(self.variances, dtype=float)
        if not np.all(np.isfinite(weights)) or weights.sum() <= 0:
            weights = np.ones(len(self.strata))
        return total * weights / weights.sum()

    def _corrected(self) -> tuple[float, float]:
        """(variance, Welch-Satterthwaite degrees of freedom), each dataset's bootstrap variance
        multiplied by n / (n - p), p its ``parameters``: its exact bias for a mean (p = 1)."""
        counts = np.array([n for _, n in self.strata], dtype=float)
        left = counts - self.parameters
        if counts.size == 0 or np.any(left < 1):
            return math.nan, math.nan
        corrected = self.stratum_variances() * counts / left
        total = float(corrected.sum())
        if not np.isfinite(total):
            return math.nan, math.nan
        if total <= 0:
            return 0.0, float(left.sum())
        return total, float(total**2 / np.sum(corrected**2 / left))

    @property
    def df(self) -> float:
        """Welch-Satterthwaite degrees of freedom over the datasets (n - 1 for one dataset)."""
        return self._corrected()[1]

    def standard_error(self) -> float:
        """The bias-corrected bootstrap standard error."""
        variance, _ = self._corrected()
        return math.sqrt(variance) if np.isfinite(variance) else math.nan

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """The interval at ``level``: value plus or minus t(Welch df) times the corrected standard
        error; a Wilson interval for a bounded share. NaN when undefined."""
        draws = np.asarray(self.draws, dtype=float)
        finite = np.isfinite(draws)
        if self.null is not None or not np.isfinite(self.value) or finite.sum() < 2 or finite.sum() < 0.5 * draws.size:
            return math.nan, math.nan
        variance, df = self._corrected()
        if not (np.isfinite(variance) and df >= 1):
            return math.nan, math.nan
        quantile = t_quantile(df, level)
        if self.bounded:
            return wilson_interval(self.value, math.sqrt(variance), self.n, quantile)
        half = quantile * math.sqrt(variance)
        return float(self.value - half), float(self.value + half)

    def map(self, fn: Callable[[np.ndarray], np.ndarray]) -> Estimate:
        """The same quantity through a function applied to its value and to every draw."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return Estimate(
                float(fn(np.asarray(self.value))),
                np.asarray(fn(self.draws), dtype=float),
                self.strata,
                self.variances,
                self.bounded,
                parameters=self.parameters,
            )


def _merged_strata(estimates: Sequence[Estimate]) -> tuple[tuple[str, int], ...]:
    """Strata of several estimates: a dataset shared by two keeps the smaller count."""
    merged: dict[str, int] = {}
    for estimate in estimates:
        for dataset, n in estimate.strata:
            merged[dataset] = min(n, merged.get(dataset, n))
    return tuple(sorted(merged.items()))


def _input_effects(fn: Callable[..., np.ndarray], estimates: Sequence[Estimate]) -> list[float]:
    """Variance of fn when only one input varies over its draws, the others held at their values."""
    effects = []
    for i, estimate in enumerate(estimates):
        args = [np.broadcast_to(np.asarray(e.value, dtype=float), np.shape(estimate.draws)) for e in estimates]
        args[i] = estimate.draws
        with np.errstate(invalid="ignore", divide="ignore"):
            effects.append(_variance(np.asarray(fn(*args), dtype=float)))
    return effects


def _combined_variances(
    fn: Callable[..., np.ndarray], estimates: Sequence[Estimate], strata: tuple[tuple[str, int], ...]
) -> tuple[float, ...] | None:
    """Each dataset's part of the variance of fn(estimates): one input's effect (``_input_effects``)
    shared among its datasets as that input's own variance is."""
    if len(strata) < 2:
        return None
    names = [d for d, _ in strata]
    parts = dict.fromkeys(names, 0.0)
    for estimate, effect in zip(estimates, _input_effects(fn, estimates)):
        if not np.isfinite(effect):
            return None
        own = estimate.stratum_variances()
        shares = own / own.sum() if np.isfinite(own).all() and own.sum() > 0 else np.full(own.size, 1 / own.size)
        for (dataset, _), share in zip(estimate.strata, shares):
            parts[dataset] += effect * share
    return tuple(parts[d] for d in names)


def combine(fn: Callable[..., np.ndarray], *estimates: Estimate) -> Estimate:
    """fn of several estimates, applied to their values and resample by resample."""
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(fn(*(np.asarray(e.value) for e in estimates)))
        draws = np.asarray(fn(*(e.draws for e in estimates)), dtype=float)
    strata = _merged_strata(estimates)
    parameters = max(e.parameters for e in estimates)
    return Estimate(value, draws, strata, _combined_variances(fn, estimates, strata), parameters=parameters)


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b."""
    return combine(np.subtract, a, b)


def log_ratio(a: Estimate, b: Estimate) -> Estimate:
    """log(a / b): a symmetric scale for "how many times larger"."""
    return combine(lambda x, y: np.log(x / y), a, b)


def pooled(estimates: Sequence[Estimate]) -> Estimate | None:
    """The mean of per-dataset estimates (each dataset weighs the same); None for none.

    Datasets are resampled independently, so each one's part of the pooled variance is its own
    variance over the number of datasets squared: the interval's degrees of freedom follow
    (Welch-Satterthwaite), and a noisy small dataset counts for what it is. Estimates that all
    carry a permutation ``null`` of one size, permuted independently per dataset, pool it the same
    way: the mean of their i-th random permutations' values (``draws``) is a draw of the mean under
    independent permutations; one estimate keeps its own null.
    """
    estimates = [e for e in estimates if e is not None]
    if not estimates:
        return None
    strata = _merged_strata(estimates)
    parts = dict.fromkeys((d for d, _ in strata), 0.0)
    for estimate in estimates:
        for (dataset, _), variance in zip(estimate.strata, estimate.stratum_variances()):
            parts[dataset] += variance / len(estimates) ** 2
    permuted = [e.draws for e in estimates if e.null is not None]
    same_size = len(permuted) == len(estimates) and len({d.size for d in permuted}) == 1
    null = estimates[0].null if len(estimates) == 1 else np.mean(np.stack(permuted), axis=0) if same_size else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return Estimate(
            float(np.mean([e.value for e in estimates])),
            np.mean(np.stack([e.draws for e in estimates]), axis=0),
            strata,
            tuple(parts.values()) if len(strata) > 1 else None,
            all(e.bounded for e in estimates),
            null=null,
            parameters=max(e.parameters for e in estimates),
        )


# --------------------------------------------------------------------------- resampling


def _stable_seed(seed: int, *names: str) -> list[int]:
    return [int(seed)] + [zlib.crc32(n.encode()) for n in names]


def resample_counts(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n) counts of each row in a bootstrap resample of n rows."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


@dataclass(frozen=True)
class Resampling:
    """One resampling of each dataset's instruction ids, shared by every model and condition.

    The counts of a dataset depend only on the seed, the dataset and its ids: a base and an
    instruct model that answered the same instructions are resampled together.
    """

    ids: dict[str, np.ndarray]  # dataset -> sorted instruction ids
    counts: dict[str, np.ndarray]  # dataset -> (R, len(ids))
    n_resamples: int

    @classmethod
    def of(cls, rows: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> Resampling:
        ids, counts = {}, {}
        datasets, sample_ids = rows["dataset"], rows["sample_index"].to_numpy()
        for dataset in sorted(datasets.unique()):  # a mask per dataset: no copy of the rows
            dataset_ids = np.unique(sample_ids[(datasets == dataset).to_numpy()])
            ids[dataset] = dataset_ids
            rng = np.random.default_rng(_stable_seed(seed, dataset))
            counts[dataset] = resample_counts(len(dataset_ids), n_resamples, rng)
        return cls(ids, counts, n_resamples)

    def weights(self, dataset: str, kept: np.ndarray) -> np.ndarray:
        """(R, len(kept)) resample counts of the given instruction ids of a dataset."""
        position = np.searchsorted(self.ids[dataset], kept)
        if np.any(position >= len(self.ids[dataset])) or np.any(self.ids[dataset][position] != kept):
            raise ValueError(f"instruction ids of {dataset!r} outside its resampling")
        return self.counts[dataset][:, position]


def resampled_mean(matrix: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(R, L) mean rows of a samples x layers matrix under each resample's counts."""
    total = weights.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (weights @ np.nan_to_num(matrix)) / total
    means[:, np.isnan(matrix).all(axis=0)] = np.nan
    return means


# --------------------------------------------------------------------------- curves of one model


def rows_of(matrix: np.ndarray, own: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The rows of a per-sample ``matrix`` (its instructions ``own``) of the instructions ``ids``, in
    that order (every one of ``ids`` must be in ``own``)."""
    order = np.argsort(own, kind="stable")
    return matrix[order[np.searchsorted(own[order], ids)]]


Key = tuple[str, str, str]  # (condition, proj, stat)


@dataclass
class CurveDraws:
    """Mean layer curves of one model with their resampled versions, keyed (condition, proj, stat).

    ``estimate[key]`` is the sample-mean curve (L,), equal to ``metrics.layer_curves``;
    ``draws[key]`` the same mean under each resample of the instructions (R, L). ``curve``
    recomputes both for a subset of the instructions.
    """

    model: str
    n_layers: int
    n_resamples: int
    level: float
    resampling: Resampling
    conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    estimate: dict[Key, np.ndarray] = field(default_factory=dict)
    draws: dict[Key, np.ndarray] = field(default_factory=dict)
    n_samples: dict[Key, int] = field(default_factory=dict)
    samples: dict[Key, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # (matrix, ids)
    # the loss screen's matched pairs beside the draw, per sample only, keyed like ``samples`` (G1
    # reads them at matched loss, nothing else does), and each dataset's screen (``analysis.extract.screens``)
    screened: dict[Key, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    screens: dict[str, Screen] = field(default_factory=dict)

    def has(self, condition: str, stat: str = "nuclear_norm") -> bool:
        return all((condition, p, stat) in self.estimate for p in PROJECTIONS)

    def stacked(self, condition: str, stat: str = "nuclear_norm") -> tuple[np.ndarray, np.ndarray]:
        """Curves of q, k, v, o stacked: estimate (4, L) and draws (4, R, L)."""
        keys = [(condition, p, stat) for p in PROJECTIONS]
        return np.stack([self.estimate[k] for k in keys]), np.stack([self.draws[k] for k in keys])

    def stacked_without(
        self, condition: str, excluded: Iterable[int], stat: str = "nuclear_norm"
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Like ``stacked`` over the instructions not in ``excluded``; also their number."""
        excluded = np.asarray(sorted(set(excluded)), dtype=int)
        estimates, draws, counts = [], [], []
        dataset = self.conditions[condition][0]
        for proj in PROJECTIONS:
            matrix, ids = self.samples[(condition, proj, stat)]
            keep = ~np.isin(ids, excluded)
            estimates.append(matrix[keep].mean(axis=0) if keep.any() else np.full(self.n_layers, np.nan))
            draws.append(resampled_mean(matrix[keep], self.resampling.weights(dataset, ids[keep])))
            counts.append(int(keep.sum()))
        return np.stack(estimates), np.stack(draws), min(counts)

    def count(self, condition: str, stat: str = "nuclear_norm") -> int:
        """Instructions behind a condition's curves (the smallest over q, k, v, o)."""
        return min(self.n_samples[(condition, p, stat)] for p in PROJECTIONS)

    def condition_key(self, dataset: str, setting: str, responses: str = metrics.CORRECT) -> str:
        return f"{dataset}/{setting}/{responses}"

    def datasets(self) -> list[str]:
        return sorted({d for d, _, _ in self.conditions.values()}, key=vocabulary.dataset_rank)

    def settings(self, dataset: str, responses: str = metrics.CORRECT, study_only: bool = True) -> list[str]:
        present = {s for d, s, r in self.conditions.values() if d == dataset and r == responses}
        order = vocabulary.STUDY_SETTINGS if study_only else vocabulary.STUDY_SETTINGS + vocabulary.CUT_SETTINGS
        return [s for s in order if s in present]

    def interval(self, estimate, draws, n: int | None = None) -> tuple[float, float, float]:
        """(estimate, low, high) of a scalar from one dataset's curves; ``n`` instructions
        (default: the fewest of this model's curves)."""
        n = n if n is not None else min(self.n_samples.values(), default=0)
        low, high = t_interval(float(estimate), draws, n, n - 1, level=self.level)
        return float(estimate), low, high


def curve_draws(
    rows: pd.DataFrame,
    model: str,
    stats_: Sequence[str],
    resampling: Resampling,
    *,
    level: float = LEVEL,
    sample_stats: Sequence[str] = (),
    screened: pd.DataFrame | None = None,
    screens: Sequence[Screen] = (),
) -> CurveDraws:
    """Bootstrap the mean curves of one model under a shared resampling of the instructions.

    A sample with a NaN in a projection's curve is dropped from that curve (``metrics.sample_matrix``);
    a resample's mean uses the resampled instructions that the curve holds. The statistics in
    ``sample_stats`` (not in ``stats_``) are kept as per-sample matrices only (``samples``), without
    mean or resampled curves: the checks that read them resample their own quantities; one that holds
    no value for a condition (R of a model imported without its tokenizer) is left out, as if not stored.
    """
    resampled = set(stats_)
    model_rows = rows[rows["model"] == model]
    if model_rows.empty:
        raise ValueError(f"no rows for model {model!r}")
    n_layers = int(model_rows["n_layers"].iloc[0])
    result = CurveDraws(model, n_layers, resampling.n_resamples, level, resampling)
    for dataset, dataset_rows in model_rows.groupby("dataset", sort=True):
        for condition, condition_rows in dataset_rows.groupby("condition", sort=True):
            first = condition_rows.iloc[0]
            result.conditions[condition] = (first["dataset"], first["setting"], first["responses"])
            for stat in dict.fromkeys([*stats_, *sample_stats]):
                for proj in PROJECTIONS:
                    matrix, kept, _ = metrics.sample_matrix(condition_rows, stat, proj)
                    if matrix.shape[0] == 0 or (stat not in resampled and not np.isfinite(matrix).any()):
                        continue  # a per-sample statistic with no value here is not stored (R of an import)
                    key = (condition, proj, stat)
                    kept = np.asarray(kept, dtype=int)
                    result.samples[key] = (matrix, kept)
                    if stat not in resampled:
                        continue
                    result.estimate[key] = matrix.mean(axis=0)
                    result.draws[key] = resampled_mean(matrix, resampling.weights(dataset, kept))
                    result.n_samples[key] = int(matrix.shape[0])
    result.screens = {s.dataset: s for s in screens if s.model == model}
    if screened is not None and len(screened):
        result.screened = metrics.per_sample(screened[screened["model"] == model], [*stats_, *sample_stats])
    return result


def all_curve_draws(
    rows: pd.DataFrame,
    models: Sequence[str],
    stats_: Sequence[str],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    sample_stats: Sequence[str] = (),
    screened: pd.DataFrame | None = None,
    screens: Sequence[Screen] = (),
) -> dict[str, CurveDraws]:
    """``curve_draws`` of every model with rows, all under one resampling and the study's ``LEVEL``,
    keyed by model name (``sample_stats``: kept per sample only, see ``curve_draws``; ``screened``:
    the rows of the loss screen's matched pairs, ``screens`` the screens, ``StudyResults``)."""
    resampling = Resampling.of(rows, n_resamples, seed)
    present = [m for m in models if len(rows) and (rows["model"] == m).any()]
    draws = {}
    for model in present:
        draws[model] = curve_draws(
            rows, model, stats_, resampling, sample_stats=sample_stats, screened=screened, screens=screens
        )
        release_freed_memory()  # the model's copied rows, before the next model's
    return draws
