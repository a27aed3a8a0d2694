"""How often the rules of the training checks say "holds" when their claim is false, by simulation.

The data are simulated in the chapter's design (``n`` probe instructions answered under None and
Detailed CoT, ``seeds`` runs per arm, ``layers`` layers, four projections; per-sample values
log-normal with an instruction effect shared by the settings, weight changes log-normal per seed)
with the claim false at its boundary: no None / Detailed gap (T3), no difference between the arms'
weight changes (T2), weight changes independent of the step-0 curve (T1). The simulated tables go
through ``training.t1_parts`` / ``t2_parts`` / ``t3_parts`` and ``rules.decide``, the functions the
chapter uses. The rules are named by what they decide (``RULES``); each training check names its
rule in the registry (``checks.Check.calibrated_by``) and ``calibration.false_holds_table`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.findings.rules import HOLDS, decide
from analysis.findings.training import TrainingResampling, t1_parts, t2_parts, t3_parts
from analysis.vocabulary import PROJECTIONS

STEP = 10
# The simulated rules: the Spearman correlation of the step-0 curve with the weight change (T1's), the
# None / Detailed arms' weight change (T2's) and the None / Detailed probe gap after training (T3's).
RULES = ("rank correlation", "arm change", "probe gap")


@dataclass(frozen=True)
class TrainingDesign:
    """The design of a training chapter's verdicts: probe instructions, seeds per arm, layers."""

    n: int = 5
    seeds: int = 5
    layers: int = 8

    @property
    def label(self) -> str:
        return f"{self.n} probes x {self.seeds} seeds x {self.layers} layers"


def simulated_tables(
    rng: np.random.Generator,
    n: int,
    seeds: int,
    layers: int,
    gap: float = 0.0,
    arm_effect: float = 0.0,
    follows_curve: float = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(probe rows, weight change rows) of arms none and detailed at steps 0 and ``STEP``.

    ``gap``: log None / Detailed of the probes; ``arm_effect``: log None / Detailed weight change
    of the early half of the layers; ``follows_curve``: how much of the step-0 curve the log weight
    change follows (0: independent of it).
    """
    base = rng.normal(0, 0.5, (layers, len(PROJECTIONS)))
    shape = rng.normal(0, 0.2, (layers, len(PROJECTIONS)))
    curve = {"none": base, "detailed": base + shape - shape.mean()}  # same mean level: no gap but ``gap``
    instruction = rng.normal(0, 0.4, n)
    probe_rows, change_rows = [], []
    for arm in ("none", "detailed"):
        for seed in range(seeds):
            for step in (0, STEP):
                for setting in ("none", "detailed"):
                    shift = gap if setting == "none" else 0.0
                    noise = rng.normal(0, 0.3 if setting == "none" else 0.1, (n, layers, len(PROJECTIONS)))
                    logs = curve[setting] + instruction[:, None, None] + shift + noise
                    for i in range(n):
                        for layer in range(layers):
                            for p, proj in enumerate(PROJECTIONS):
                                probe_rows.append(
                                    (arm, seed, step, setting, i, layer, proj, float(np.exp(logs[i, layer, p])))
                                )
            early = np.where(np.arange(layers) < layers // 2, arm_effect if arm == "none" else 0.0, 0.0)
            moved = follows_curve * curve[arm] + early[:, None] + rng.normal(0, 0.3, (layers, len(PROJECTIONS)))
            for layer in range(layers):
                for p, proj in enumerate(PROJECTIONS):
                    change_rows.append((arm, seed, STEP, layer, proj, float(np.exp(moved[layer, p]))))
    probes = pd.DataFrame(
        probe_rows, columns=["arm", "seed", "step", "setting", "sample_index", "layer", "proj", "nuclear_norm"]
    )
    change = pd.DataFrame(change_rows, columns=["arm", "seed", "step", "layer", "proj", "nuclear_norm"])
    return probes, change


def verdicts(probes, change, n_resamples: int = 400, seed: int = 0) -> dict[str, str]:
    """The verdict of each rule on simulated tables (the None arm for the rules per arm)."""
    resampling = TrainingResampling.of(
        "sim", probes["sample_index"].unique(), probes["seed"].unique(), n_resamples, seed
    )
    return {
        "rank correlation": decide(t1_parts(probes, change, resampling, "none", STEP)),
        "arm change": decide(t2_parts(change, resampling, STEP)),
        "probe gap": decide(t3_parts(probes, resampling, "none", STEP)),
    }


def false_holds(
    design: TrainingDesign = TrainingDesign(), reps: int = 200, n_resamples: int = 400, seed: int = 0
) -> dict[str, float]:
    """Share of "holds" of each rule over ``reps`` simulations of ``design`` with every claim false
    (no effect); the rules share the simulations."""
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(RULES, 0)
    for rep in range(reps):
        probes, change = simulated_tables(rng, design.n, design.seeds, design.layers)
        for rule, verdict in verdicts(probes, change, n_resamples, seed + rep).items():
            hits[rule] += verdict == HOLDS
    return {rule: count / reps for rule, count in hits.items()}
