"""Synthetic results tables in the results-store schema, with curves chosen by the test, and a
results store (with its run log) that holds them for a page to open."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.findings import gap_split

PROJS = ("q", "k", "v", "o")
# the default profile's two offline models, as the synthetic tables name them: (template, layers)
BASE, INSTRUCT = "gemma-3-270m", "smollm2-135m-instruct"
MODELS = {BASE: ("base", 18), INSTRUCT: ("instruct", 30)}
# The paper's picture in levels: fast thinking large, slow thinking small, Detailed CoT cut to the
# Simplified length between Simplified and full Detailed CoT, every Wiki setting alike.
LEVEL = {
    "none": 3.0,
    "simplified": 2.0,
    "detailed": 1.0,
    "detailed_cut_none": 1.0,
    "detailed_cut_simplified": 1.4,
    "len100": 1.0,
    "len500": 1.0,
    "len1000": 1.0,
    "unpopular": 1.0,
    # the answer scored alone: the same level whatever precedes it
    "none_answer": 1.0,
    "simplified_answer": 1.0,
    "detailed_answer": 1.0,
    "detailed_other_answer": 1.0,
    "detailed_shuffled_answer": 1.0,
    # the Detailed CoT scored on as few tokens as its answer, random or matched in loss: None CoT's level
    # (averaging is the gap)
    "detailed_scored_answer": 3.0,
    "detailed_matched_answer": 3.0,
}
# ... and in bumpiness from layer to layer (the reasoning settings; each test sets the Wiki ones)
REASONING_WIGGLE = {
    "none": 1.0,
    "simplified": 0.3,
    "detailed": 0.05,
    "detailed_cut_none": 0.05,
    "detailed_cut_simplified": 0.05,
}
TYPICAL_TOKENS = {
    "none": 4,
    "simplified": 60,
    "detailed": 300,
    "len100": 130,
    "len500": 650,
    "len1000": 1300,
    "unpopular": 600,
    "detailed_cut_simplified": 60,
    "detailed_cut_none": 4,
    "none_answer": 2,
    "simplified_answer": 2,
    "detailed_answer": 2,
    "detailed_other_answer": 2,
    "detailed_shuffled_answer": 2,
    "detailed_scored_answer": 4,
}

Curve = Callable[[str, str, str, str, str, np.ndarray], np.ndarray]


def rising_curve(model: str, dataset: str, setting: str, responses: str, proj: str, layers: np.ndarray) -> np.ndarray:
    """The same gently rising curve for every condition."""
    return 1.0 + 0.05 * layers


def make_results(
    conditions: Iterable[tuple[str, str, str]],
    models: dict[str, tuple[str, int]] | None = None,
    n_samples: int = 8,
    curve: Curve = rising_curve,
    noise: float = 0.02,
    sample_sd: float = 0.0,
    length_exponent: float = 0.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Long results table: one row per (model, condition, sample, layer, projection).

    conditions: (dataset, setting, responses) triples. models: name -> (template, n_layers).
    nuclear_norm = curve[layer] * n_response_tokens**length_exponent * exp(sample effect +
    entry noise); the other statistics follow from it.
    """
    models = models or {"base-model": ("base", 18)}
    rng = np.random.default_rng(seed)
    pieces = []
    for model, (template, n_layers) in models.items():
        for dataset, setting, responses in conditions:
            layers = np.arange(n_layers)
            sample, layer, proj = (
                a.ravel() for a in np.meshgrid(np.arange(n_samples), layers, np.arange(len(PROJS)), indexing="ij")
            )
            curves = np.stack(
                [np.asarray(curve(model, dataset, setting, responses, p, layers), dtype=float) for p in PROJS]
            )
            tokens = np.maximum(
                1, np.round(TYPICAL_TOKENS.get(setting, 100) * np.exp(0.3 * rng.standard_normal(n_samples)))
            )
            scale = tokens**length_exponent * np.exp(sample_sd * rng.standard_normal(n_samples))
            nuclear = curves[proj, layer] * scale[sample] * np.exp(noise * rng.standard_normal(sample.size))
            condition = f"{dataset}/{setting}/{responses}"
            pieces.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "dataset": dataset,
                        "setting": setting,
                        "responses": responses,
                        "condition": condition,
                        "source_file": f"{condition}.json",
                        "sample_index": sample,
                        "layer": layer,
                        "proj": np.array(PROJS)[proj],
                        "nuclear_norm": nuclear,
                        "sigma_max": 0.3 * nuclear,
                        "sigma_min": 1e-3 * nuclear,
                        "sigma1_ratio": 0.3 + 0.001 * layer,
                        "frobenius": 0.5 * nuclear,
                        "effective_rank": 10.0 + 0.1 * layer,
                        "entry_mean": 0.0,
                        "entry_max": 0.01 * nuclear,
                        "entry_min": -0.01 * nuclear,
                        "cos_same_layer": np.where(proj < 2, 0.5, np.nan),
                        "cos_next_layer": np.where(layer < n_layers - 1, 0.8, np.nan),
                        "loss": 1.0 + 0.1 * sample,
                        "n_tokens": tokens[sample] + 20,
                        "n_response_tokens": tokens[sample].astype(int),
                        "max_length": 1024,
                        "template": template,
                        "n_layers": n_layers,
                    }
                )
            )
    return pd.concat(pieces, ignore_index=True)


def reasoning_conditions(
    dataset: str, settings=("none", "simplified", "detailed"), responses=("correct", "irrelevant")
) -> list[tuple[str, str, str]]:
    """All (dataset, setting, responses) triples of one dataset."""
    return [(dataset, s, r) for s in settings for r in responses]


def _key(first: pd.Series, model: str):
    from analysis.store import RunKey

    return RunKey(
        model, first["dataset"], first["setting"], first["responses"], int(first["max_length"]), first["template"]
    )


def write_store(root: Path, rows: pd.DataFrame, skipped: pd.DataFrame | None = None) -> Path:
    """A results store under ``root / "results"`` holding ``rows`` (and one condition's ``skipped``
    records); its root."""
    from analysis.store import ResultsStore

    store = ResultsStore(root / "results")
    for (model, _), group in rows.groupby(["model", "condition"]):
        store.write(_key(group.iloc[0], model.replace("/", "--")), group, None)
    if skipped is not None:
        store.write(_key(skipped.iloc[0], skipped.iloc[0]["model"]), None, skipped)
    return store.root


def record_run(root: Path, models: Iterable[str], conditions: Iterable[str], n_resamples: int, name: str = "test"):
    """A run log in ``root`` that records a profile of these models and conditions (what a page shows)."""
    from analysis import profiles
    from analysis.core.settings import ExtractionSettings
    from analysis.store import runlog

    profile = profiles.Profile(name, tuple(models), tuple(conditions), ExtractionSettings(), n_resamples)
    runlog.RunLog.start(root, profile.as_dict(), "local", []).save()


def cpu_design_findings(seed: int = 21):
    """Every check's findings on a synthetic store in the default profile's design: both offline
    models (two families), every ``cpu`` condition, 5 samples, None CoT far noisier than the rest.
    The paper's picture is true except that correct and irrelevant responses differ under no
    setting (F3's Detailed part is false)."""
    from analysis import checks, profiles
    from analysis.findings import pooling
    from analysis.findings.bootstrap import all_curve_draws

    conditions = [tuple(c.split("/")) for c in profiles.get_profile("cpu").conditions]
    levels = {**LEVEL, "detailed_cut_none": 2.5}

    def curve(model, dataset, setting, responses, proj, layers):
        wobble = 1 + (0.3 if setting == "none" else 0.02) * np.sin(1.7 * layers)
        return levels[setting] * wobble * np.where(layers < 5, 1.2 if setting == "none" else 1.0, 1.0)

    rows = make_results(conditions, MODELS, n_samples=5, curve=curve, noise=0.05, sample_sd=0.15, seed=seed)
    rng = np.random.default_rng(seed + 1)
    none = rows["setting"].isin(["none", "detailed_cut_none"]).to_numpy()
    sample = (rows["model"] + rows["condition"] + rows["sample_index"].astype(str)).to_numpy()
    keys, inverse = np.unique(sample[none], return_inverse=True)
    rows.loc[none, "nuclear_norm"] *= np.exp(0.6 * rng.standard_normal(keys.size))[inverse]
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm",), n_resamples=400)
    return checks.run_checks(draws, pairs=pooling.model_pairs(list(MODELS), {m: t for m, (t, _) in MODELS.items()}))


# per condition, its mean log nuclear norm above Detailed CoT's: F1's gap is 2.0, the phrase 0.5,
# the reasoning 0.3, which tokens -0.2 and how many tokens 1.4
SPLIT_SHIFT = dict(zip(gap_split.CHAIN, (2.0, 1.5, 1.2, 1.1, 1.4, 0.0)))  # none, ..., detailed
SPLIT_TRUE = {
    "the phrase": 0.5,
    "the reasoning": 0.3,
    "which tokens at equal loss": 0.1,
    "how surprising": -0.3,
    "how many tokens": 1.4,
}


def chain_rows(datasets=("gsm8k",), *, n=8, shift=SPLIT_SHIFT, seed=0, sample_sd=0.3, **keywords):
    """Rows of the chain's six conditions of each dataset, each condition's log norms ``shift[c]``
    above a common rising curve; ``shift`` may map a dataset to its own shifts."""
    conditions = [(d, s, "correct") for d in datasets for s in gap_split.CHAIN]
    rows = make_results(
        conditions, models={"m": ("base", 12)}, n_samples=n, noise=0.05, sample_sd=sample_sd, seed=seed, **keywords
    )
    for dataset in datasets:
        own = shift.get(dataset, shift)
        for setting, value in own.items():
            chosen = (rows["dataset"] == dataset) & (rows["setting"] == setting)
            for column in ("nuclear_norm", "frobenius"):
                rows.loc[chosen, column] *= np.exp(value)
    return rows
