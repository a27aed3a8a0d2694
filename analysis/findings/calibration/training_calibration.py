"""How often the rules of the training checks say "holds" when their claim is false, by simulation.

The data are simulated in the chapter's design (``n`` probe instructions answered under None and
Detailed CoT, ``seeds`` runs of each of the three arms, ``layers`` layers, four projections) with
every claim false at or near its boundary, and a *training-set effect*: each seed trains on its
own instructions (``analysis.train.loop``), which moves the weight change of each arm by a random
amount per layer segment (early, middle, late) and the trained probes' None / Detailed gap by a
random amount, beside the noise of the batch order. The simulated step-0 probes are log-normal with
an instruction effect shared by the settings and a None / Detailed gap (T3's precondition); the
probes after training are the step-0 probes moved by the run; the log weight change is seed noise,
the training-set effects and, in one scenario, a trend over depth that the step-0 curve shares.
Every claim is false in every scenario: the step-0 curve does not predict the weight change beyond
depth (T1), the arms' weight changes do not differ (T2), the gap shrinks by exactly T3's margin
(T3). The simulated arrays go through ``training_checks.t1_from_cubes`` / ``t2_from_cubes`` /
``t3_from_cubes`` and ``rules.decide``, the functions the chapter's checks call, one verdict per
check (``simulated_verdicts``); ``simulated_tables`` writes them as the store's rows for the
end-to-end tests, ``simulated_runs`` as the training checks read them (their battery fixture). The
rules (``RULES``: ``rule.RANK_CORRELATION``, ``rule.ARM_CHANGE``, ``rule.PROBE_GAP``) share each
simulation and each reads its check's verdict, keyed by the rule;
each training check names its rule in the registry (``checks.Check.calibrated_by``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.core.vocabulary import PROJECTIONS
from analysis.findings import metrics
from analysis.findings.calibration.rule import ARM_CHANGE, PROBE_GAP, RANK_CORRELATION, TRAINING_RULES, Rule
from analysis.findings.rules import HOLDS, NOT_APPLICABLE, Verdict, decide
from analysis.findings.training_checks import (
    T3_MARGIN,
    NotApplicable,
    TrainingResampling,
    TrainingRuns,
    t1_from_cubes,
    t1_parts,
    t2_from_cubes,
    t2_parts,
    t3_applicable,
    t3_from_cubes,
    t3_parts,
)
from analysis.train.naming import TrainingRunId

STEP = 10
ARMS = ("none", "detailed", "detailed_cut_none")
SETTINGS = ("none", "detailed")
RULES = TRAINING_RULES  # the rules simulated here, in the order of the tables
SEED_NOISE = 0.3  # sd of the log weight change per layer and projection from the batch order
GAP_NOISE = 0.03  # sd of the change of the probes' log None / Detailed gap per run from the batch order


@dataclass(frozen=True)
class TrainingDesign:
    """The design of a training chapter's verdicts: probe instructions, seeds per arm, layers."""

    n: int = 5
    seeds: int = 5
    layers: int = 8

    @property
    def label(self) -> str:
        return f"{self.n} probes x {self.seeds} seeds x {self.layers} layers"


@dataclass(frozen=True)
class Effects:
    """What the simulated runs hold. Logs throughout.

    ``gap``: None / Detailed of the step-0 probes; ``gap_change``: its change by step K;
    ``arm_effect``: None arm / each other arm's weight change in the early layers;
    ``follows_curve``: how much of its setting's step-0 curve an arm's weight change follows;
    ``depth``: a trend over depth (from -depth to +depth) in the step-0 curves and in the weight
    change; ``training_set``: the sd of the training-set effects in units of the batch-order noise
    (per arm, seed and layer segment on the weight change, per arm and seed on the gap);
    ``shared_training_set``: every seed trains on the same instructions (the effects repeat over
    the seeds: the design before each seed drew its own). ``cut_arm``: the token-matched arm's own
    weight change in the early layers and in every layer (T2 false against it while true against
    Detailed CoT).
    """

    gap: float = 0.5
    gap_change: float = 0.0
    arm_effect: float = 0.0
    follows_curve: float = 0.0
    depth: float = 0.0
    training_set: float = 1.0
    shared_training_set: bool = False
    cut_arm: tuple[float, float] = (0.0, 0.0)


NO_EFFECT = Effects()  # no effect but a step-0 gap of 0.5
NULL = Effects(gap_change=-T3_MARGIN)  # every claim false: T3 at its boundary, T1 and T2 with no effect
# The null scenarios, each with every claim false; all but the last are the design of the runs (each
# seed draws its own training set), the last the design before it (the rules' rate there is shown,
# not promised).
SCENARIOS: dict[str, Effects] = {
    "no training-set effect": replace(NULL, training_set=0.0),
    "training-set effect of the seed noise's size": NULL,
    "training-set effect twice the seed noise": replace(NULL, training_set=2.0),
    "step-0 curve and weight change follow depth only": replace(NULL, depth=2.0),
    # the change follows the step-0 curve and depth about equally: T1's quantity near 0 (its boundary)
    # in 30 layers (the training profile's model), a little below it in fewer
    "step-0 curve predicts the change as well as depth": replace(NULL, depth=1.0, follows_curve=1.0),
    # T2 true against Detailed CoT, false against the token-matched arm: the None arm's early change is
    # all token count (the cut arm moves as it does: two parts at their null), or the None arm leads the
    # cut arm by as much in every layer (early / late at its null, the rest clearly true)
    "None arm ahead of Detailed CoT only, as the token-matched arm": replace(NULL, arm_effect=1.5, cut_arm=(1.5, 0.0)),
    "None arm ahead of the token-matched arm evenly over depth": replace(NULL, arm_effect=1.5, cut_arm=(1.5, -1.5)),
    "one training set for every seed (former design)": replace(NULL, shared_training_set=True),
}
# The battery's fixture of T1-T3 (their checks' ``battery``): every claim clearly true (a gap that stays,
# the None arm changing the early layers more, the change following the step-0 curve), and every
# claim clearly false (the curve predicting the opposite, the None arm changing them less, the gap
# shrinking by all of it).
TRUE_EFFECTS = Effects(gap=0.5, arm_effect=1.0, follows_curve=2.0, training_set=0.0)
FALSE_EFFECTS = Effects(gap=0.5, gap_change=-0.5, arm_effect=-1.0, follows_curve=-1.0, training_set=0.0)
RUNS_DESIGN = tuple(name for name, e in SCENARIOS.items() if not e.shared_training_set)


@dataclass(frozen=True)
class SimulatedRuns:
    """Log probe norms ``start[setting]`` (S, n, L, 4) at step 0 and ``after[arm][setting]`` after
    ``STEP`` steps, and log weight changes ``moved[arm]`` (S, L, 4)."""

    start: dict[str, np.ndarray]
    after: dict[str, dict[str, np.ndarray]]
    moved: dict[str, np.ndarray]


def _by_segment(rng: np.random.Generator, sd: float, layers: int, size: tuple[int, ...]) -> np.ndarray:
    """Effects of sd ``sd`` per early, middle and late segment, spread over the layers: (*size, L)."""
    out = np.zeros((*size, layers))
    for lo, hi in metrics.layer_splits(layers).values():
        out[..., lo:hi] = rng.normal(0, sd, (*size, 1)) if sd > 0 else 0.0
    return out


def simulate(rng: np.random.Generator, design: TrainingDesign, effects: Effects = NULL) -> SimulatedRuns:
    """One simulated set of runs of every arm (see the module docstring)."""
    n, seeds, layers, p = design.n, design.seeds, design.layers, len(PROJECTIONS)
    trend = effects.depth * np.linspace(-1, 1, layers)[:, None]
    base = rng.normal(0, 0.5, (layers, p)) + trend
    shape = rng.normal(0, 0.2, (layers, p))
    curve = {"none": base, "detailed": base + shape - shape.mean()}  # the same mean level: no gap but ``gap``
    instruction = rng.normal(0, 0.4, n)[:, None, None]
    start = {}
    for setting in SETTINGS:
        noise = rng.normal(0, 0.3 if setting == "none" else 0.1, (n, layers, p))
        logs = curve[setting] + instruction + (effects.gap if setting == "none" else 0.0) + noise
        start[setting] = np.broadcast_to(logs, (seeds, n, layers, p))  # the released weights: one for all seeds
    runs = 1 if effects.shared_training_set else seeds
    after, moved = {}, {}
    shared = _by_segment(rng, effects.training_set * SEED_NOISE, layers, (runs,))  # the seed's set, every arm
    early = np.arange(layers) < metrics.layer_splits(layers)["early"][1]
    for arm in ARMS:
        level = rng.normal(0, 0.1, (seeds, 1, 1, 1))  # the trained model's level, both settings
        shift = GAP_NOISE * rng.normal(size=(seeds, 1, 1, 1))
        shift = shift + effects.training_set * GAP_NOISE * _broadcast(rng.normal(size=(runs, 1, 1, 1)), seeds)
        after[arm] = {
            s: start[s]
            + level
            + rng.normal(0, 0.05, (seeds, n, layers, p))
            + ((effects.gap_change + shift) if s == "none" else 0.0)
            for s in SETTINGS
        }
        own = _by_segment(rng, effects.training_set * SEED_NOISE, layers, (runs,))
        follows = effects.follows_curve * curve["none" if arm == "none" else "detailed"]
        moved[arm] = (
            follows
            + trend
            + (effects.arm_effect * early[:, None] if arm == "none" else 0.0)
            + (effects.cut_arm[0] * early[:, None] + effects.cut_arm[1] if arm == "detailed_cut_none" else 0.0)
            + _broadcast(shared + own, seeds)[:, :, None]
            + rng.normal(0, SEED_NOISE, (seeds, layers, p))
        )
    return SimulatedRuns(start, after, moved)


def _broadcast(values: np.ndarray, seeds: int) -> np.ndarray:
    return np.broadcast_to(values, (seeds, *values.shape[1:]))


def resampling_of(design: TrainingDesign, n_resamples: int, seed: int) -> TrainingResampling:
    return TrainingResampling.of(
        "sim", np.arange(design.n), np.arange(design.seeds), n_resamples=n_resamples, seed=seed
    )


def simulated_verdicts(runs: SimulatedRuns, resampling: TrainingResampling) -> dict[Rule, Verdict]:
    """The verdict of each training check on simulated runs, keyed by the rule that calibrates it
    (the None arm for the checks per arm): what that rule says."""
    t3 = t3_applicable(t3_from_cubes(runs.start, runs.after["none"], resampling, STEP))
    return {
        RANK_CORRELATION: decide(t1_from_cubes(runs.start["none"], runs.moved["none"], resampling, STEP)),
        ARM_CHANGE: decide(t2_from_cubes(runs.moved, resampling)),
        PROBE_GAP: NOT_APPLICABLE if isinstance(t3, NotApplicable) else decide(t3),
    }


def _false_holds_by_scenario(
    design: TrainingDesign, reps: int, n_resamples: int, seed: int
) -> dict[str, dict[Rule, float]]:
    """scenario -> rule -> share of "holds" over ``reps`` simulations of ``design`` (the rules share
    a scenario's simulations)."""
    rates = {}
    for k, (name, effects) in enumerate(SCENARIOS.items()):
        rng = np.random.default_rng([seed, k])
        hits = dict.fromkeys(RULES, 0)
        for rep in range(reps):
            runs = simulate(rng, design, effects)
            verdicts = simulated_verdicts(runs, resampling_of(design, n_resamples, seed + rep))
            for rule in RULES:
                hits[rule] += verdicts[rule] == HOLDS
        rates[name] = {rule: hits[rule] / reps for rule in RULES}
    return rates


def false_holds_by_scenario(
    design: TrainingDesign = TrainingDesign(),
    reps: int = 2000,
    n_resamples: int = 400,
    seed: int = 0,
    *,
    checks_of: Mapping[Rule, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Share of "holds" of each rule over ``reps`` simulations of ``design`` in each null scenario
    (``SCENARIOS``; the rules share a scenario's simulations): one row per scenario and rule, with
    the checks each rule stands for after its name where ``checks_of`` says them
    (``rule_rates.checks_by_rule``)."""
    rows = []
    for name, rates in _false_holds_by_scenario(design, reps, n_resamples, seed).items():
        for rule, rate in rates.items():
            named = {} if checks_of is None else {"checks": ", ".join(checks_of.get(rule, ()))}
            rows.append(
                {
                    "rule": rule.name,
                    **named,
                    "scenario": name,
                    "runs' design": name in RUNS_DESIGN,
                    "instructions": design.label,
                    "reps": reps,
                    "holds when false": rate,
                }
            )
    return pd.DataFrame(rows)


def largest_false_holds(
    design: TrainingDesign = TrainingDesign(), reps: int = 2000, n_resamples: int = 400, seed: int = 0
) -> dict[Rule, float]:
    """Each rule's largest share of false "holds" over the null scenarios of the runs' design
    (``false_holds_by_scenario``)."""
    rates = _false_holds_by_scenario(design, reps, n_resamples, seed)
    return {rule: max(rates[name][rule] for name in RUNS_DESIGN) for rule in RULES}


# ----------------------------------------------------------------------------- as the store holds them


def simulated_tables(
    rng: np.random.Generator, n: int, seeds: int, layers: int, *, effects: Effects = NO_EFFECT
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(probe rows, weight change rows) of the three arms at steps 0 and ``STEP``, simulated by
    ``simulate`` with ``effects`` (default: no effect but a step-0 gap of 0.5)."""
    runs = simulate(rng, TrainingDesign(n, seeds, layers), effects)
    probes, change = [], []
    index = pd.MultiIndex.from_product(
        [range(seeds), range(n), range(layers), PROJECTIONS], names=["seed", "sample_index", "layer", "proj"]
    )
    for arm in ARMS:
        for step in (0, STEP):
            for setting in SETTINGS:
                logs = runs.start[setting] if step == 0 else runs.after[arm][setting]
                frame = pd.DataFrame({"nuclear_norm": np.exp(logs).ravel()}, index=index).reset_index()
                probes.append(frame.assign(arm=arm, step=step, setting=setting))
        frame = pd.DataFrame(
            {"nuclear_norm": np.exp(runs.moved[arm]).ravel()},
            index=pd.MultiIndex.from_product(
                [range(seeds), range(layers), PROJECTIONS], names=["seed", "layer", "proj"]
            ),
        ).reset_index()
        change.append(frame.assign(arm=arm, step=STEP))
    return pd.concat(probes, ignore_index=True), pd.concat(change, ignore_index=True)


def store_tables(probes: pd.DataFrame, change: pd.DataFrame, model: str = "m") -> tuple[pd.DataFrame, pd.DataFrame]:
    """``simulated_tables`` as the store and the weight-change table hold them: each run's probe rows
    under its probe model's name (``TrainingRunId.probe_model``), the weight changes under its run."""
    runs = {
        (arm, seed): TrainingRunId(model, "aqua", arm, "correct", int(seed))
        for arm, seed in probes[["arm", "seed"]].drop_duplicates().itertuples(index=False)
    }
    rows = probes.assign(
        model=[runs[(a, s)].probe_model(t) for a, s, t in zip(probes["arm"], probes["seed"], probes["step"])],
        dataset="aqua",
        responses="correct",
    ).drop(columns=["arm", "seed", "step"])
    change = change.assign(model=model, run=[runs[(a, s)].run for a, s in zip(change["arm"], change["seed"])])
    return rows, change


def simulated_runs(
    effects: Effects, *, design: TrainingDesign = TrainingDesign(), n_resamples: int = 200, seed: int = 0
) -> TrainingRuns:
    """What the training checks read (``training_checks.TrainingRuns``) from runs simulated with
    ``effects`` in ``design``, as the store holds them: the battery's fixture of T1-T3."""
    rng = np.random.default_rng(seed)
    tables = simulated_tables(rng, design.n, design.seeds, design.layers, effects=effects)
    return TrainingRuns(*store_tables(*tables), n_resamples=n_resamples, seed=seed)


def verdicts_of_tables(probes, change, n_resamples: int = 400, seed: int = 0) -> dict[Rule, Verdict]:
    """The verdict of each training check on simulated tables, keyed by the rule that calibrates it,
    through the chapter's table functions (the None arm for the checks per arm)."""
    resampling = TrainingResampling.of(
        "sim", probes["sample_index"].unique(), probes["seed"].unique(), n_resamples=n_resamples, seed=seed
    )
    t2 = t2_parts(change, resampling, STEP)
    # no parts where the tables lack a cube, as the chapter's checks read them (``training.t1``, ``training.t3``)
    t3 = t3_parts(probes, resampling, "none", STEP) or []
    return {
        RANK_CORRELATION: decide(t1_parts(probes, change, resampling, "none", step=STEP) or []),
        ARM_CHANGE: NOT_APPLICABLE if isinstance(t2, NotApplicable) else decide(t2),
        PROBE_GAP: NOT_APPLICABLE if isinstance(t3, NotApplicable) else decide(t3),
    }
