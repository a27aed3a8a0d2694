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
  weights better than depth alone: per projection, the Spearman correlation across layers between
  the step-0 mean log nuclear norm of the probes and the mean log nuclear norm of ``W_K - W_0``,
  minus the absolute Spearman correlation of the layer index with that change, averaged over q, k,
  v, o, lies above 0 (the two correlations shown beside it).
- T2: training on None CoT changes the early layers more than training on Detailed CoT: for the
  full Detailed arm and for the Detailed arm cut to the None-CoT token count, each deciding, the
  mean log weight change of the early layers, None arm minus that arm (paired by seed: the arms of
  a seed train on the same instructions), lies above 0, and that difference is larger in the early
  layers than in the late ones. Not applicable where one of the three arms was not trained.
- T3: F1's gap persists: the change since step 0 of the None / Detailed gap of the probes (mean log
  nuclear norm over layers and projections, paired by instruction) lies above minus log 1.1 (the
  gap shrinks by less than 10%); the gaps at step 0 and after K steps are shown. Not applicable
  where the step-0 gap is not established (its interval not above 0).

The seeds of a run replicate its training set as well as its batch order (``analysis.train.loop``),
so resampling the seeds covers which instructions were trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core.vocabulary import PROJECTIONS
from analysis.findings import metrics, roles
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES, Estimate, _stable_seed, resample_counts
from analysis.findings.rules import SAME_MARGIN, Finding, NotApplicable, Part, Role, Unit, Why
from analysis.train.naming import is_probe_model, parse_probe_model

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
    def of(cls, dataset: str, ids, seeds, *, n_resamples: int = 1000, seed: int = 0) -> TrainingResampling:
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


def probe_cube(probes: pd.DataFrame, resampling: TrainingResampling, arm: str, step: int, *, setting: str):
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


def _ranks(values: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(values, axis=-1), axis=-1).astype(float)


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation of matching rows of (..., L) arrays (no ties in continuous values)."""
    ra, rb = _ranks(a), _ranks(b)
    ra -= ra.mean(axis=-1, keepdims=True)
    rb -= rb.mean(axis=-1, keepdims=True)
    return (ra * rb).sum(axis=-1) / np.sqrt((ra**2).sum(axis=-1) * (rb**2).sum(axis=-1))


def t1_from_cubes(start: np.ndarray, moved: np.ndarray, resampling: TrainingResampling, step: int, *, group: str = ""):
    """T1's parts from the step-0 log probe norms (S, n, L, 4) and the log weight change (S, L, 4):
    per projection, the Spearman correlation across layers of the step-0 curve with the change,
    minus the absolute Spearman correlation of the layer index with the change (the best that a
    curve that only encodes depth, rising or falling, could do), averaged over q, k, v, o."""
    curve, curve_draws = resampling.mean(start)  # (L, 4), (R, L, 4)
    shift, shift_draws = resampling.seed_mean(moved)
    shift_rows, shift_draw_rows = shift.T, np.swapaxes(shift_draws, 1, 2)
    depth = np.arange(shift.shape[0], dtype=float)
    by_curve = spearman_rows(curve.T, shift_rows), spearman_rows(np.swapaxes(curve_draws, 1, 2), shift_draw_rows)
    by_depth = tuple(np.abs(spearman_rows(np.broadcast_to(depth, x.shape), x)) for x in (shift_rows, shift_draw_rows))
    n = resampling.units

    def estimate(pair):
        return _estimate(pair[0].mean(), pair[1].mean(axis=1), resampling.dataset, n)

    beyond = (by_curve[0] - by_depth[0], by_curve[1] - by_depth[1])

    def correlation(name: str, pair, role: Role, *, decides: bool) -> Part:
        return Part(
            name=name,
            estimate=estimate(pair),
            side="above",
            bound=0.0,
            unit=Unit.CORRELATION,
            role=role,
            facet=(group,),
            group=group,
            decides=decides,
        )

    return [
        correlation(
            f"Spearman(step-0 curve, change after {step} steps)", by_curve, roles.SPEARMAN_CURVE, decides=False
        ),
        correlation("|Spearman(layer index, change)|", by_depth, roles.SPEARMAN_DEPTH, decides=False),
        correlation("step-0 curve beyond layer index", beyond, roles.BEYOND_DEPTH, decides=True),
    ]


def t1_parts(probes, change, resampling: TrainingResampling, arm: str, *, step: int) -> list[Part] | None:
    """T1 for an arm that trains on a probed setting (``t1_from_cubes`` on its runs)."""
    start = probe_cube(probes, resampling, arm, 0, setting=arm)
    moved = change_cube(change, resampling, arm, step)
    if start is None or moved is None:
        return None
    return t1_from_cubes(start, moved, resampling, step, group=arm)


# The arms T2 compares the None arm with, each deciding: the full Detailed CoT and Detailed CoT cut,
# per instruction, to the None-CoT response's token count (the same instructions and response tokens
# in every step as the None arm).
T2_SLOW_ARMS = ("detailed", "detailed_cut_none")
T2_LABELS = {"detailed": "Detailed", "detailed_cut_none": "Detailed cut to None length"}


def t2_from_cubes(cubes: dict[str, np.ndarray], resampling: TrainingResampling, fast: str = "none") -> list[Part]:
    """T2's parts from each arm's log weight change (S, L, 4), paired by seed: for each arm of
    ``T2_SLOW_ARMS``, the early-layer log change of the fast arm minus that arm's > 0, and that
    difference larger early than late; every part decides."""
    splits = metrics.layer_splits(cubes[fast].shape[1])
    n = len(resampling.seeds)

    def ratio(name: str, values: np.ndarray, slow: str, *, role: Role) -> Part:
        estimate = _estimate(*resampling.seed_mean(values), "seeds", n)
        group = f"vs {T2_LABELS[slow]}"
        return Part(
            name=name,
            estimate=estimate,
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=role,
            facet=(slow,),
            group=group,
            decides=True,
        )

    parts = []
    for slow in T2_SLOW_ARMS:
        difference = cubes[fast] - cubes[slow]
        gap = {seg: difference[:, lo:hi, :].mean(axis=(1, 2)) for seg, (lo, hi) in splits.items()}
        parts += [
            ratio(f"None / {T2_LABELS[slow]} weight change, early layers", gap["early"], slow, role=roles.ARM_EARLY),
            ratio("early / late of that ratio", gap["early"] - gap["late"], slow, role=roles.ARM_EARLY_LATE),
        ]
    return parts


def t2_parts(change, resampling: TrainingResampling, step: int, fast: str = "none") -> list[Part] | NotApplicable:
    """T2 on the runs' weight change after ``step`` (``t2_from_cubes``); not applicable where an
    arm it compares was not trained."""
    arms = (fast, *T2_SLOW_ARMS)
    missing = [a for a in arms if a not in set(change["arm"])]
    if missing:
        return NotApplicable(
            Why.NOT_TRAINED,
            f"no runs on {', '.join(missing)}",
            f"the check compares the None arm with {' and '.join(T2_SLOW_ARMS)}",
        )
    cubes = {arm: change_cube(change, resampling, arm, step) for arm in arms}
    if any(c is None for c in cubes.values()):
        return []
    return t2_from_cubes(cubes, resampling, fast)


# T3's margin: the None / Detailed probe ratio may shrink by less than this much since step 0
# (log 1.1, the 10% of the curve's size that F3 and F5 call "nearly the same").
T3_MARGIN = SAME_MARGIN


def t3_from_cubes(
    start: dict[str, np.ndarray],
    after: dict[str, np.ndarray],
    resampling: TrainingResampling,
    step: int,
    *,
    group: str = "",
):
    """T3's parts from the log probe norms of the None and Detailed settings (S, n, L, 4) at step 0
    (``start``) and after ``step`` steps (``after``): the change since step 0 of the None / Detailed
    gap (mean log over layers and projections, paired by instruction) above minus ``T3_MARGIN``
    decides; the gaps at step 0 and after ``step`` are shown."""
    gap0 = (start["none"] - start["detailed"]).mean(axis=(2, 3))  # (S, n): the same for every seed
    gap = (after["none"] - after["detailed"]).mean(axis=(2, 3))
    units, n = resampling.units, len(resampling.ids)

    def ratio(name: str, values: np.ndarray, count: int, *, role: Role, bound: float = 0.0, decides: bool = True):
        estimate = _estimate(*resampling.mean(values), resampling.dataset, count)
        return Part(
            name=name,
            estimate=estimate,
            side="above",
            bound=bound,
            unit=Unit.RATIO,
            role=role,
            facet=(group,),
            group=group,
            decides=decides,
        )

    # after training the probes differ by seed too: the fewer of probes and seeds counts
    return [
        ratio("None / Detailed at step 0", gap0, n, role=roles.GAP_AT_START, decides=False),
        ratio(f"None / Detailed at step {step}", gap, units, role=roles.GAP_AFTER, decides=False),
        ratio(f"step {step} / step 0 of that ratio", gap - gap0, units, role=roles.GAP_CHANGE, bound=-T3_MARGIN),
    ]


def t3_parts(probes, resampling: TrainingResampling, arm: str, step: int) -> list[Part] | NotApplicable | None:
    """T3 for one arm (``t3_from_cubes``); not applicable where the step-0 gap is not established
    on the probes (reversed or not resolved: there is no F1 gap to persist)."""
    cubes = {
        at: {s: probe_cube(probes, resampling, arm, at, setting=s) for s in ("none", "detailed")} for at in (0, step)
    }
    if any(c is None for by_setting in cubes.values() for c in by_setting.values()):
        return None
    parts = t3_from_cubes(cubes[0], cubes[step], resampling, step, group=arm)
    return t3_applicable(parts)


def t3_applicable(parts: list[Part]) -> list[Part] | NotApplicable:
    """T3's parts, or why T3 does not apply: the step-0 gap decided (enough probes)
    but not above 0."""
    start = next(p for p in parts if p.role is roles.GAP_AT_START)
    if start.n_smallest >= MIN_VERDICT_SAMPLES and not start.supports():
        return NotApplicable(
            Why.PRECONDITION,
            "the None / Detailed gap at step 0 is not established",
            "no gap of fast over slow thinking to persist",
            evidence=tuple(parts),
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
            dataset,
            common_probes(model_probes),
            model_probes["seed"].unique(),
            n_resamples=runs.n_resamples,
            seed=runs.seed,
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
    return t1_parts(runs.probes, runs.change, runs.resampling, arm, step=runs.step) or []


def t2(runs: ModelRuns, arm: str | None) -> list[Part] | NotApplicable | None:
    """T2 for the model as a whole (the None arm against the Detailed arm and the cut arm)."""
    return None if arm is not None else t2_parts(runs.change, runs.resampling, runs.step)


def t3(runs: ModelRuns, arm: str | None) -> list[Part] | NotApplicable | None:
    """T3 for each arm."""
    return None if arm is None else t3_parts(runs.probes, runs.resampling, arm, runs.step) or []


def per_training_run(check, inputs) -> list[Finding]:
    """The run of a check of the scope "per training run" (``scopes.TrainingRunCheck``): its parts for every
    base model of ``inputs.extra[TRAINING_RUNS]``, as a whole and per arm trained on."""
    runs = inputs.extra.get(TRAINING_RUNS)
    if runs is None:
        return []
    found = []
    for model in model_runs(runs):
        for arm in (None, *model.arms):
            parts = check.parts(model, arm)
            if parts is None:
                continue
            scope = model.dataset if arm is None else f"{model.dataset}, trained on {arm}"
            if isinstance(parts, NotApplicable):
                found.append(Finding(check.id, model.model, scope, False, parts.evidence, not_applicable=parts))
            else:
                found.append(Finding(check.id, model.model, scope, False, tuple(parts)))
    return found
