"""G1: do one sample's layer curves tell irrelevant from correct responses beyond its loss?

Irrelevant responses have a higher loss, and a sample's gradient grows with its loss; F3's gap may
be the loss seen through the gradient. Per dataset and setting, each instruction gives one correct
and one irrelevant response (None-CoT pairs whose two answers are the same text left out). Three
scores of a sample are cross-validated with the folds grouped by instruction (both responses of a
question always on the same side): a linear score of its curves (log nuclear norm of every
projection and layer), of its loss, and of its loss with the log of its response length. Each is
a ridge-penalised least-squares fit of the label on standardised features (``ridge_scores``):
closed form, deterministic, with as many features as layers times four at a few dozen
instructions. The AUROC of each set of out-of-fold scores, and the differences that decide (curves
less loss, curves less loss and length), are recomputed under every resample of the instructions
(the book's one resampling, ``bootstrap``) with the scores held fixed; their error rate is
measured by ``gap_calibration`` where the curves carry the loss and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from analysis.core import vocabulary
from analysis.findings.bootstrap import PROJECTIONS, CurveDraws, Estimate
from analysis.findings.classifier import weighted_auroc
from analysis.findings.rules import Part, Role

LOSS, TOKENS, NUCLEAR = "loss", "n_response_tokens", "nuclear_norm"
READS = (LOSS, TOKENS)  # the per-sample statistics G1 reads beyond the nuclear norm curves
N_FOLDS = 5
PENALTY = 1.0  # ridge penalty on the mean of the standardised features' cross products
FOLD_SEED = 0

CURVES, LOSS_ONLY, LOSS_AND_LENGTH, BOTH = "curves", "loss", "loss and length", "curves and loss"
DECIDING = ("curves - loss", "curves - loss and length")
# the roles of the deciding setting's AUROCs, by which the page finds them
AUROC_ROLES = {LOSS_ONLY: Role.AUROC_LOSS, CURVES: Role.AUROC_CURVES, BOTH: Role.AUROC_CURVES_AND_LOSS}


def _samples(cd: CurveDraws, condition: str, stat: str) -> list[tuple[np.ndarray, np.ndarray]] | None:
    keys = [(condition, proj, stat) for proj in PROJECTIONS]
    return [cd.samples[k] for k in keys] if all(k in cd.samples for k in keys) else None


def _rows(pieces: list[tuple[np.ndarray, np.ndarray]], ids: np.ndarray) -> list[np.ndarray]:
    out = []
    for matrix, own in pieces:
        order = np.argsort(own, kind="stable")
        out.append(matrix[order[np.searchsorted(own[order], ids)]])
    return out


def paired_features(
    cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()
) -> dict[str, np.ndarray] | None:
    """The instructions with both responses stored (not in ``excluded``): ``ids`` (n,), and per
    response (``correct``, ``irrelevant``) the curve features (n, 4 L), loss (n,) and log response
    length (n,; absent where the store lacks token counts). None when a column is not stored."""
    conditions = {r: cd.condition_key(dataset, setting, r) for r in vocabulary.RESPONSES}
    nuclear = {r: _samples(cd, c, NUCLEAR) for r, c in conditions.items()}
    loss = {r: _samples(cd, c, LOSS) for r, c in conditions.items()}
    if any(v is None for v in (*nuclear.values(), *loss.values())):
        return None
    tokens = {r: _samples(cd, c, TOKENS) for r, c in conditions.items()}
    with_tokens = all(v is not None for v in tokens.values())
    pieces = [p for r in conditions for p in nuclear[r] + loss[r] + (tokens[r] if with_tokens else [])]
    shared = set.intersection(*(set(ids.tolist()) for _, ids in pieces)) - set(excluded)
    ids = np.asarray(sorted(shared), dtype=int)
    out: dict[str, np.ndarray] = {"ids": ids}
    for r in conditions:
        curves = np.concatenate(_rows(nuclear[r], ids), axis=1) if ids.size else np.empty((0, 0))
        curves = curves[:, np.isfinite(curves).all(axis=0)] if ids.size else curves
        if ids.size and not np.all(curves > 0):
            return None
        out[f"{r} {CURVES}"] = np.log(curves) if ids.size else curves
        out[f"{r} {LOSS_ONLY}"] = np.nanmax(_rows(loss[r][:1], ids)[0], axis=1) if ids.size else np.empty(0)
        if with_tokens:
            counts = np.nanmax(_rows(tokens[r][:1], ids)[0], axis=1) if ids.size else np.empty(0)
            out[f"{r} length"] = np.log(np.maximum(counts, 1))
    return out


def folds_of(n: int, n_folds: int = N_FOLDS, seed: int = FOLD_SEED) -> np.ndarray:
    """Fold of each of n instructions: a seeded permutation dealt into min(n_folds, n) folds."""
    fold = np.empty(n, dtype=int)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % max(1, min(n_folds, n))
    return fold


def ridge_scores(x: np.ndarray, y: np.ndarray, fold: np.ndarray, penalty: float = PENALTY) -> np.ndarray:
    """Out-of-fold linear scores of the rows of ``x`` (rows, features) for labels ``y`` (0/1):
    on each training fold the features are standardised and y - mean(y) fitted by ridge
    regression on the mean cross product of the features (the dual form, K = X X' / p), and the
    held-out rows scored. ``fold`` gives each row's fold."""
    x = np.asarray(x, dtype=float).reshape(len(y), -1)
    scores = np.full(len(y), np.nan)
    for f in np.unique(fold):
        test, train = fold == f, fold != f
        mean, sd = x[train].mean(axis=0), x[train].std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        a, b = (x[train] - mean) / sd, (x[test] - mean) / sd
        p = max(x.shape[1], 1)
        alpha = np.linalg.solve(a @ a.T / p + penalty * np.eye(a.shape[0]), y[train] - y[train].mean())
        scores[test] = (b @ a.T / p) @ alpha
    return scores


def feature_sets(features: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The (correct, irrelevant) feature matrices of each score: curves, loss, loss and length
    (where stored), curves and loss."""
    c, i = "correct", "irrelevant"

    def columns(*names: str) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.column_stack([features[f"{r} {n}"] for n in names]) for r in (c, i))  # type: ignore

    sets = {CURVES: columns(CURVES), LOSS_ONLY: columns(LOSS_ONLY), BOTH: columns(CURVES, LOSS_ONLY)}
    if f"{c} length" in features:
        sets[LOSS_AND_LENGTH] = columns(LOSS_ONLY, "length")
    return sets


def aurocs(features: dict[str, np.ndarray], weights: np.ndarray, dataset: str) -> dict[str, Estimate]:
    """The out-of-fold AUROC of each score (``feature_sets``), and under each resample's counts of
    the instructions (``weights`` (R, n)), with the scores held fixed."""
    n = features["ids"].size
    fold = np.tile(folds_of(n), 2)
    y = np.repeat([0.0, 1.0], n)
    row_weights = np.hstack([weights, weights])
    out = {}
    for name, (correct, irrelevant) in feature_sets(features).items():
        scores = ridge_scores(np.vstack([correct, irrelevant]), y, fold)
        value = float(weighted_auroc(scores, y))
        out[name] = Estimate(value, weighted_auroc(scores, y, row_weights), ((dataset, n),), bounded=True)
    return out


def _difference(a: Estimate, b: Estimate) -> Estimate:
    return Estimate(a.value - b.value, a.draws - b.draws, a.strata)


def setting_parts(cd: CurveDraws, dataset: str, setting: str, *, decides: bool, excluded=()) -> list[Part] | None:
    """G1's parts of one setting (``group`` its label): the AUROC of the curves less that of the
    loss, and less that of the loss and length (where the store has the token counts), above 0;
    beside them the curves and loss less the loss, and each AUROC."""
    features = paired_features(cd, dataset, setting, excluded)
    if features is None or features["ids"].size < 2:
        return None
    estimates = aurocs(features, cd.resampling.weights(dataset, features["ids"]), dataset)
    group = vocabulary.setting_label(setting)
    parts = [Part(DECIDING[0], _difference(estimates[CURVES], estimates[LOSS_ONLY]), "above", 0.0, group=group)]
    if LOSS_AND_LENGTH in estimates:
        gap = _difference(estimates[CURVES], estimates[LOSS_AND_LENGTH])
        parts.append(Part(DECIDING[1], gap, "above", 0.0, group=group))
    parts = [p if decides else Part(p.name, p.estimate, p.side, p.bound, group=group, decides=False) for p in parts]
    added = _difference(estimates[BOTH], estimates[LOSS_ONLY])
    parts.append(Part("curves and loss - loss", added, "above", 0.0, group=group, decides=False))
    for name, estimate in estimates.items():
        role = AUROC_ROLES.get(name) if decides else None
        parts.append(Part(f"AUROC {name}", estimate, "above", 0.5, group=group, decides=False, role=role))
    return parts


def g1_parts(cd: CurveDraws, dataset: str, identical: Iterable[int] = (), **_) -> list[Part] | None:
    """G1: under Detailed CoT, the AUROC of the curves exceeds that of the loss and that of the
    loss and length; the same under None CoT shown beside (identical pairs left out)."""
    detailed = setting_parts(cd, dataset, "detailed", decides=True)
    if detailed is None:
        return None
    none = setting_parts(cd, dataset, "none", decides=False, excluded=identical)
    return detailed + (none or [])
