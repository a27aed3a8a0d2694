"""The questions of the chapter "During training", T1-T3, as claims checked with intervals.

Each question is a check of the registry (``checks.REGISTRY``, scope "per training run": claim,
chapter and calibration declared there); this module holds their parts (``t1``, ``t2``, ``t3``:
lists of ``rules.Part`` decided by ``rules.decide``, as F1-F5's are) and the runner of their scope
(``per_training_run``), which reads ``TrainingRuns`` from ``checks.Inputs.extra``. The
probe statistics are the store's rows of the training checkpoints (``analysis.train.naming``);
the weight change is the runs' own table. Every quantity is a mean over the probe instructions
and the seeds; its resamples resample both (the instructions with one resampling shared by every
arm, step and setting, so that a difference keeps its pairing; the seeds independently), and its
interval is the bootstrap engine's t interval on the instructions behind it. T2 rests on the
weight change alone, which does not depend on the probes: its unit is the seed.

- T1: the step-0 nuclear-norm curve of a setting predicts where training on that setting moves the
  weights: the Spearman correlation across layers between the step-0 mean log nuclear norm of the
  probes and the mean log nuclear norm of ``W_K - W_0`` (per projection, averaged over q, k, v, o)
  lies above 0.
- T2: training on None CoT changes the early layers more than training on Detailed CoT: the mean
  log weight change of the early layers, None arm minus Detailed arm (paired by seed), lies above
  0, and that difference is larger in the early layers than in the late ones.
- T3: F1's gap persists: after K steps of each arm, the mean log nuclear norm of the None-CoT
  probes minus that of the Detailed-CoT probes lies above 0 (the step-0 gap shown beside it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.findings import metrics
from analysis.findings.bootstrap import Estimate, _stable_seed, resample_counts
from analysis.findings.rules import Finding, Part
from analysis.train.naming import is_probe_model, parse_probe_model
from analysis.vocabulary import PROJECTIONS

# The key under which ``checks.Inputs.extra`` holds the training runs (``TrainingRuns``).
TRAINING_RUNS = "training runs"
RUN_COLUMNS = ("base_model", "run", "step", "arm", "seed")


def with_run_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """The probe rows of the store (models named ``<model>@train:<run>:step<k>``) with the run's
    base model, name, step, arm and seed as columns; other rows left out."""
    rows = rows[rows["model"].map(is_probe_model)]
    if rows.empty:
        return rows.assign(**{name: pd.Series(dtype=object) for name in RUN_COLUMNS})
    parsed = pd.DataFrame([parse_probe_model(m) for m in rows["model"].unique()]).assign(model=rows["model"].unique())
    return rows.merge(parsed[["model", *RUN_COLUMNS]], on="model", how="left")


@dataclass(frozen=True)
class TrainingResampling:
    """One resampling of the probe instructions and one of the seeds, shared by every quantity."""

    dataset: str
    ids: np.ndarray  # probe instruction ids, sorted
    seeds: np.ndarray  # seeds, sorted
    instruction_counts: np.ndarray  # (R, n)
    seed_counts: np.ndarray  # (R, S)

    @classmethod
    def of(cls, dataset: str, ids, seeds, n_resamples: int = 1000, seed: int = 0) -> TrainingResampling:
        ids, seeds = np.sort(np.unique(ids)), np.sort(np.unique(seeds))
        rng = np.random.default_rng(_stable_seed(seed, dataset, "training"))
        return cls(
            dataset,
            ids,
            seeds,
            resample_counts(len(ids), n_resamples, rng),
            resample_counts(len(seeds), n_resamples, rng),
        )

    @property
    def units(self) -> int:
        """The replicates behind a quantity that varies with both the probes and the seeds: the fewer
        of the two (its interval's degrees of freedom and the minimum for a verdict count them)."""
        return min(len(self.ids), len(self.seeds))

    def mean(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, draws) of the mean over seeds and instructions of values (S, n, ...)."""
        value = values.mean(axis=(0, 1))
        weights = np.einsum("rs,rn->rsn", self.seed_counts, self.instruction_counts)
        draws = np.tensordot(weights, values, axes=([1, 2], [0, 1])) / weights.sum(axis=(1, 2)).reshape(
            (-1,) + (1,) * (values.ndim - 2)
        )
        return value, draws

    def seed_mean(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, draws) of the mean over seeds of values (S, ...)."""
        counts = self.seed_counts
        draws = np.tensordot(counts, values, axes=([1], [0])) / counts.sum(axis=1).reshape(
            (-1,) + (1,) * (values.ndim - 1)
        )
        return values.mean(axis=0), draws


def probe_cube(probes: pd.DataFrame, resampling: TrainingResampling, arm: str, step: int, setting: str):
    """(S, n, L, 4) log nuclear norms of one arm's probes of one setting at ``step`` (None if any is missing)."""
    chosen = probes[(probes["arm"] == arm) & (probes["step"] == step) & (probes["setting"] == setting)]
    chosen = chosen[chosen["responses"] == metrics.CORRECT] if "responses" in chosen else chosen
    cubes = []
    for seed in resampling.seeds:
        run = chosen[chosen["seed"] == seed]
        table = run.pivot_table(index="sample_index", columns=["layer", "proj"], values="nuclear_norm")
        if table.empty or not np.isin(resampling.ids, table.index.to_numpy()).all():
            return None
        table = table.loc[resampling.ids]
        layers = sorted(table.columns.get_level_values(0).unique())
        table = table.reindex(columns=pd.MultiIndex.from_product([layers, list(PROJECTIONS)]))
        values = table.sort_index().to_numpy(dtype=float).reshape(len(resampling.ids), len(layers), len(PROJECTIONS))
        cubes.append(np.log(values))
    return np.stack(cubes)


def change_cube(change: pd.DataFrame, resampling: TrainingResampling, arm: str, step: int):
    """(S, L, 4) log nuclear norms of ``W_step - W_0`` of one arm (None if any is missing or zero)."""
    chosen = change[(change["arm"] == arm) & (change["step"] == step)]
    cubes = []
    for seed in resampling.seeds:
        run = chosen[chosen["seed"] == seed]
        table = run.pivot_table(index="layer", columns="proj", values="nuclear_norm").reindex(columns=list(PROJECTIONS))
        if table.empty or not np.all(table.to_numpy() > 0):
            return None
        cubes.append(np.log(table.sort_index().to_numpy(dtype=float)))
    return np.stack(cubes)


def _estimate(value, draws, stratum: str, n: int) -> Estimate:
    return Estimate(float(value), np.asarray(draws, dtype=float), ((stratum, int(n)),))


def _times(x: float) -> float:
    return math.exp(x)


def _ranks(values: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(values, axis=-1), axis=-1).astype(float)


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation of matching rows of (..., L) arrays (no ties in continuous values)."""
    ra, rb = _ranks(a), _ranks(b)
    ra -= ra.mean(axis=-1, keepdims=True)
    rb -= rb.mean(axis=-1, keepdims=True)
    return (ra * rb).sum(axis=-1) / np.sqrt((ra**2).sum(axis=-1) * (rb**2).sum(axis=-1))


def t1_parts(probes, change, resampling: TrainingResampling, arm: str, step: int) -> list[Part] | None:
    """T1 for an arm that trains on a probed setting: Spearman across layers of the step-0 curve
    and the weight change after ``step``, per projection, averaged over q, k, v, o."""
    start = probe_cube(probes, resampling, arm, 0, arm)
    moved = change_cube(change, resampling, arm, step)
    if start is None or moved is None:
        return None
    curve, curve_draws = resampling.mean(start)  # (L, 4), (R, L, 4)
    shift, shift_draws = resampling.seed_mean(moved)
    value = spearman_rows(curve.T, shift.T).mean()
    draws = spearman_rows(np.swapaxes(curve_draws, 1, 2), np.swapaxes(shift_draws, 1, 2)).mean(axis=1)
    estimate = _estimate(value, draws, resampling.dataset, resampling.units)
    return [Part(f"Spearman(step-0 curve, change after {step} steps)", estimate, "above", 0.0, float, group=arm)]


def t2_parts(change, resampling: TrainingResampling, step: int, fast: str = "none", slow: str = "detailed"):
    """T2: early-layer log weight change of the fast arm minus the slow arm's (paired by seed) > 0,
    and that difference larger early than late."""
    a, b = change_cube(change, resampling, fast, step), change_cube(change, resampling, slow, step)
    if a is None or b is None:
        return None
    splits = metrics.layer_splits(a.shape[1])
    gap = {seg: (a - b)[:, lo:hi, :].mean(axis=(1, 2)) for seg, (lo, hi) in splits.items()}
    early, early_draws = resampling.seed_mean(gap["early"])
    uneven, uneven_draws = resampling.seed_mean(gap["early"] - gap["late"])
    n = len(resampling.seeds)
    return [
        Part(
            "None / Detailed weight change, early layers x",
            _estimate(early, early_draws, "seeds", n),
            "above",
            0.0,
            _times,
        ),
        Part("early / late of that ratio x", _estimate(uneven, uneven_draws, "seeds", n), "above", 0.0, _times),
    ]


def t3_parts(probes, resampling: TrainingResampling, arm: str, step: int) -> list[Part] | None:
    """T3 for one arm: the None / Detailed probe gap (mean log over layers and projections) after
    ``step`` steps > 0; the gap at step 0 shown beside it."""
    parts = []
    for at, decides in ((step, True), (0, False)):
        fast = probe_cube(probes, resampling, arm, at, "none")
        slow = probe_cube(probes, resampling, arm, at, "detailed")
        if fast is None or slow is None:
            return None
        value, draws = resampling.mean((fast - slow).mean(axis=(2, 3)))
        # after training the probes differ by seed too: the fewer of probes and seeds counts
        estimate = _estimate(value, draws, resampling.dataset, resampling.units if at else len(resampling.ids))
        parts.append(
            Part(f"None / Detailed at step {at} x", estimate, "above", 0.0, _times, group=arm, decides=decides)
        )
    return parts


def common_probes(probes: pd.DataFrame) -> np.ndarray:
    """The probe instructions stored for every run, step and setting (a probe whose response was
    truncated away under one setting is left out of every quantity, keeping the pairing)."""
    groups = probes.groupby(["run", "step", "setting"])["sample_index"].agg(lambda ids: frozenset(ids))
    return np.sort(np.array(sorted(frozenset.intersection(*groups.tolist())), dtype=int))


@dataclass(frozen=True)
class TrainingRuns:
    """What the checks of the training runs read (``checks.Inputs.extra[TRAINING_RUNS]``): the
    probe rows of the store, the runs' weight changes, the step K of the verdicts (None: the last
    step every run of a model reached) and the bootstrap's resamples and seed."""

    probes: pd.DataFrame
    change: pd.DataFrame
    step: int | None = None
    n_resamples: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class ModelRuns:
    """The training runs of one base model, with the one resampling shared by its quantities."""

    model: str
    dataset: str
    probes: pd.DataFrame
    change: pd.DataFrame
    resampling: TrainingResampling
    step: int
    arms: tuple[str, ...]


def model_runs(runs: TrainingRuns) -> list[ModelRuns]:
    """The runs of every base model of the probe rows, in name order."""
    probes = with_run_columns(runs.probes) if "arm" not in runs.probes else runs.probes
    found = []
    for model, model_probes in probes.groupby("base_model", sort=True):
        change = runs.change[runs.change["model"] == model]
        step = runs.step if runs.step is not None else int(change.groupby("run")["step"].max().min())
        dataset = str(model_probes["dataset"].iloc[0])
        resampling = TrainingResampling.of(
            dataset, common_probes(model_probes), model_probes["seed"].unique(), runs.n_resamples, runs.seed
        )
        arms = tuple(sorted(change["arm"].unique()))
        found.append(ModelRuns(str(model), dataset, model_probes, change, resampling, step, arms))
    return found


# The parts of each check of the scope "per training run" (``checks``): one model's runs and an arm
# (None: the model as a whole); None where the check is not about that arm, no parts where the
# runs lack what it reads.


def t1(runs: ModelRuns, arm: str | None) -> list[Part] | None:
    """T1 for each arm trained on a probed setting."""
    if arm is None or arm not in set(runs.probes["setting"]):
        return None
    return t1_parts(runs.probes, runs.change, runs.resampling, arm, runs.step) or []


def t2(runs: ModelRuns, arm: str | None) -> list[Part] | None:
    """T2 for the model as a whole (None arm against Detailed arm)."""
    return None if arm is not None else t2_parts(runs.change, runs.resampling, runs.step) or []


def t3(runs: ModelRuns, arm: str | None) -> list[Part] | None:
    """T3 for each arm."""
    return None if arm is None else t3_parts(runs.probes, runs.resampling, arm, runs.step) or []


def per_training_run(check, inputs) -> list[Finding]:
    """The runner of the scope "per training run" (``checks.SCOPES``): the check's parts for every
    base model of ``inputs.extra[TRAINING_RUNS]``, as a whole and per arm trained on."""
    runs = inputs.extra.get(TRAINING_RUNS)
    if runs is None:
        return []
    found = []
    for model in model_runs(runs):
        for arm in (None, *model.arms):
            parts = check.parts(model, arm)
            if parts is not None:
                scope = model.dataset if arm is None else f"{model.dataset}, trained on {arm}"
                found.append(Finding(check.id, model.model, scope, False, tuple(parts)))
    return found
