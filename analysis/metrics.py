"""The paper's layer metrics: layer curves, MAD, RD and the checks F1-F5.

Input everywhere is the long results table: one row per (model, condition, sample, layer,
projection) with one column per gradient statistic (see the study's section 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

PROJECTIONS = ("q", "k", "v", "o")
SEGMENTS = ("early", "middle", "late")
REASONING_SETTINGS = ("none", "simplified", "detailed")
WIKI_DATASET = "wiki"
CORRECT, IRRELEVANT = "correct", "irrelevant"

# The paper's early/middle/late splits (0-based, half-open) for the depths of its models.
PAPER_SPLITS: dict[int, tuple[int, int]] = {28: (7, 21), 26: (7, 20), 32: (10, 20), 42: (12, 30)}

# F5 thresholds used when the frame holds no reasoning data to compare the Wiki numbers with.
WIKI_FALLBACK_MAD_RATIO = 0.5
WIKI_FALLBACK_RD = 0.1

CONDITION_COLUMNS = ["model", "dataset", "setting", "responses", "condition"]


# --------------------------------------------------------------------------- layer splits


def layer_splits(n_layers: int) -> dict[str, tuple[int, int]]:
    """Early/middle/late layer ranges (0-based, half-open) for a model of `n_layers` layers.

    Depths 26, 28, 32 and 42 use the paper's table. Any other depth L uses
    e = floor(L/4 + 1/2) layers for each of the early and the late part:
    early [0, e), middle [e, L - e), late [L - e, L); so 18 -> 5/8/5 and 30 -> 8/14/8.
    """
    n_layers = int(n_layers)
    if n_layers < 4:
        raise ValueError(f"need at least 4 layers to split into early/middle/late, got {n_layers}")
    if n_layers in PAPER_SPLITS:
        first_middle, first_late = PAPER_SPLITS[n_layers]
    else:
        edge = int(np.floor(n_layers / 4 + 0.5))
        first_middle, first_late = edge, n_layers - edge
    return {"early": (0, first_middle), "middle": (first_middle, first_late),
            "late": (first_late, n_layers)}


# --------------------------------------------------------------------------- MAD and RD


def mean_absolute_difference(values: Sequence[float] | np.ndarray) -> float | np.ndarray:
    """MAD of a curve: (1/(L-1)) * sum_i |v[i+1] - v[i]| along the last axis.

    A 1-D curve gives a float; a stack of curves (..., L) gives one MAD per curve.
    Fewer than two points give NaN.
    """
    v = np.asarray(values, dtype=float)
    if v.shape[-1] < 2:
        out = np.full(v.shape[:-1], np.nan)
    else:
        out = np.abs(np.diff(v, axis=-1)).mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def mad_by_segment(curve: Sequence[float] | np.ndarray) -> dict[str, float]:
    """MAD of one layer curve over the early, middle and late layers and over all layers.

    A segment's MAD uses only the differences between layers inside that segment.
    """
    v = np.asarray(curve, dtype=float)
    out = {name: mean_absolute_difference(v[lo:hi]) for name, (lo, hi) in layer_splits(len(v)).items()}
    out["all"] = mean_absolute_difference(v)
    return out


def relative_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-layer relative difference (b - a) / a, with `a` the reference (correct responses)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (b - a) / a


def rd_summary(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, top: int = 5) -> dict:
    """Summary of RD(a -> b): mean |RD| and mean RD over layers, and the `top` layers by |RD|.

    Layers where RD is not finite (NaN curve values, zero reference) are left out.
    `top_layers` lists 0-based layer indices, largest |RD| first.
    """
    rd = relative_difference(a, b)
    finite = np.isfinite(rd)
    if not finite.any():
        return {"mean_abs_rd": np.nan, "mean_rd": np.nan, "top_layers": ()}
    layers = np.flatnonzero(finite)
    order = np.argsort(-np.abs(rd[finite]), kind="stable")
    return {
        "mean_abs_rd": float(np.mean(np.abs(rd[finite]))),
        "mean_rd": float(np.mean(rd[finite])),
        "top_layers": tuple(int(i) for i in layers[order[:top]]),
    }


# --------------------------------------------------------------------------- samples -> curves


def _n_layers(rows: pd.DataFrame) -> int:
    if "n_layers" in rows.columns and rows["n_layers"].notna().any():
        depths = rows["n_layers"].dropna().unique()
        if len(depths) != 1:
            raise ValueError(f"one model and condition must have one depth, got {sorted(depths)}")
        return int(depths[0])
    return int(rows["layer"].max()) + 1


def _pivot_samples(rows: pd.DataFrame, stat: str, n_layers: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Samples x layers matrix of one projection's rows, incomplete samples dropped."""
    if rows.duplicated(["sample_index", "layer"]).any():
        raise ValueError("several rows for one sample and layer: keep one max_length and "
                         "template per model before computing curves")
    table = rows.pivot(index="sample_index", columns="layer", values=stat)
    table = table.reindex(columns=range(n_layers))
    values = table.to_numpy(dtype=float)
    # A layer where no sample has a value (e.g. the next-layer cosine of the last layer) is
    # outside the statistic's curve; a NaN anywhere else drops the sample.
    defined = ~np.isnan(values).all(axis=0)
    complete = ~np.isnan(values[:, defined]).any(axis=1)
    return values[complete], table.index.to_numpy()[complete], int((~complete).sum())


def sample_matrix(df: pd.DataFrame, stat: str, proj: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Samples x layers matrix of `stat` for one projection of one (model, condition).

    Returns (matrix, kept sample ids, number of dropped samples). Column j is layer j. A sample
    with a NaN (or a missing row) at any layer of the curve is dropped and counted; layers where
    no sample has a value stay as NaN columns and drop nobody.
    """
    for column in ("model", "condition"):
        if column in df.columns and df[column].nunique() > 1:
            raise ValueError(f"sample_matrix needs rows of one {column}, got {df[column].nunique()}")
    rows = df[df["proj"] == proj]
    return _pivot_samples(rows, stat, _n_layers(df))


def layer_curves(df: pd.DataFrame, stat: str = "nuclear_norm") -> pd.DataFrame:
    """Sample-mean layer curve of `stat` for every (model, condition, projection).

    Columns: model, dataset, setting, responses, condition, proj, layer, value, n_samples,
    n_dropped, stat, n_layers, and template when the input has it. Projections come in
    q, k, v, o order.
    """
    extra = ["template"] if "template" in df.columns else []
    pieces = []
    for (model, condition), rows in df.groupby(["model", "condition"], sort=True):
        n_layers = _n_layers(rows)
        first = rows.iloc[0]
        for proj, proj_rows in rows.groupby("proj", sort=False):
            matrix, _, n_dropped = _pivot_samples(proj_rows, stat, n_layers)
            n_samples = matrix.shape[0]
            value = matrix.mean(axis=0) if n_samples else np.full(n_layers, np.nan)
            piece = pd.DataFrame({
                "model": model, "dataset": first["dataset"], "setting": first["setting"],
                "responses": first["responses"], "condition": condition, "proj": proj,
                "layer": np.arange(n_layers), "value": value, "n_samples": n_samples,
                "n_dropped": n_dropped, "stat": stat, "n_layers": n_layers,
            })
            for column in extra:
                piece[column] = first[column]
            pieces.append(piece)
    columns = CONDITION_COLUMNS + ["proj", "layer", "value", "n_samples", "n_dropped", "stat",
                                   "n_layers"] + extra
    if not pieces:
        return pd.DataFrame(columns=columns)
    out = pd.concat(pieces, ignore_index=True)[columns]
    return out.sort_values(["model", "condition", "proj", "layer"], key=_proj_sort_key,
                           ignore_index=True)


def _proj_order(values: Iterable[str]) -> list[str]:
    present = set(values)
    return [p for p in PROJECTIONS if p in present] + sorted(present - set(PROJECTIONS))


def _proj_sort_key(column: pd.Series) -> pd.Series:
    """Sort key that puts projections in q, k, v, o order and leaves other columns alone."""
    if column.name != "proj":
        return column
    return column.map({p: i for i, p in enumerate(PROJECTIONS)}).fillna(len(PROJECTIONS))


def _curve_groups(curves: pd.DataFrame, keys: list[str]):
    if "stat" in curves.columns and curves["stat"].nunique() > 1:
        raise ValueError("curves of several statistics: select one `stat` first")
    return curves.sort_values("layer").groupby(keys, sort=True)


# --------------------------------------------------------------------------- MAD and RD tables


def mad_table_from_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """MAD per (model, condition, projection) from `layer_curves` output: early/middle/late/all."""
    rows = []
    for _, curve in _curve_groups(curves, ["model", "condition", "proj"]):
        first = curve.iloc[0]
        row = {c: first[c] for c in CONDITION_COLUMNS + ["proj", "n_samples", "n_dropped"]}
        row.update(mad_by_segment(curve["value"].to_numpy()))
        rows.append(row)
    out = pd.DataFrame(rows, columns=CONDITION_COLUMNS + ["proj", "n_samples", "n_dropped",
                                                           *SEGMENTS, "all"])
    return out.sort_values(["model", "condition", "proj"], key=_proj_sort_key, ignore_index=True)


def mad_table(df: pd.DataFrame, stat: str = "nuclear_norm") -> pd.DataFrame:
    """MAD of the sample-mean curve of `stat`, one row per (model, condition, projection)."""
    return mad_table_from_curves(layer_curves(df, stat))


def rd_table_from_curves(curves: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """RD of irrelevant against correct curves of the same (model, dataset, setting, projection).

    Columns: model, dataset, setting, proj, mean_abs_rd, mean_rd (positive: irrelevant larger),
    top_layers, n_correct, n_irrelevant. Settings without both response types are skipped.
    """
    columns = ["model", "dataset", "setting", "proj", "mean_abs_rd", "mean_rd", "top_layers",
               "n_correct", "n_irrelevant"]
    rows = []
    for key, group in _curve_groups(curves, ["model", "dataset", "setting", "proj"]):
        by_responses = {r: g.sort_values("layer") for r, g in group.groupby("responses")}
        if CORRECT not in by_responses or IRRELEVANT not in by_responses:
            continue
        a, b = by_responses[CORRECT], by_responses[IRRELEVANT]
        summary = rd_summary(a["value"].to_numpy(), b["value"].to_numpy(), top=top)
        rows.append(dict(zip(["model", "dataset", "setting", "proj"], key), **summary,
                         n_correct=int(a["n_samples"].iloc[0]),
                         n_irrelevant=int(b["n_samples"].iloc[0])))
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["model", "dataset", "setting", "proj"], key=_proj_sort_key,
                           ignore_index=True)


def rd_table(df: pd.DataFrame, stat: str = "nuclear_norm", top: int = 5) -> pd.DataFrame:
    """RD of `stat` between correct and irrelevant responses of the same model, dataset, setting."""
    return rd_table_from_curves(layer_curves(df, stat), top=top)


# --------------------------------------------------------------------------- findings F1-F5


def _fmt(x: float) -> str:
    return "nan" if x is None or not np.isfinite(x) else f"{x:.3g}"


def _decided(*values: float) -> bool:
    return all(v is not None and np.isfinite(v) for v in values)


def _finding(check: str, claim: str, model: str, scope: str, numbers: str, holds) -> dict:
    return {"check": check, "claim": claim, "model": model, "scope": scope, "numbers": numbers,
            "holds": holds}


F1_CLAIM = "No CoT gives larger nuclear norms than detailed CoT (early layers and all layers)"
F2_CLAIM = "All-layer MAD falls from no CoT to simplified to detailed CoT, for each of q, k, v, o"
F3_CLAIM = ("Detailed CoT separates correct from irrelevant responses more than no CoT "
            "(mean |RD|), with irrelevant responses larger")
F4_CLAIM = "The instruct model separates correct from irrelevant (detailed CoT) no better than the base"
F5_CLAIM = ("Wiki: longer responses do not shrink MAD like slow thinking does, and correct vs "
            "irrelevant curves are nearly the same")


def _mean_value(curves: pd.DataFrame, model: str, dataset: str, setting: str,
                layers: tuple[int, int] | None = None) -> float:
    """Mean of the correct-response curves of one condition over projections and `layers`."""
    sel = curves[(curves["model"] == model) & (curves["dataset"] == dataset)
                 & (curves["setting"] == setting) & (curves["responses"] == CORRECT)]
    if layers is not None:
        sel = sel[(sel["layer"] >= layers[0]) & (sel["layer"] < layers[1])]
    return float(sel["value"].mean()) if len(sel) else np.nan


def _f1_rows(curves: pd.DataFrame) -> list[dict]:
    """F1 per reasoning dataset holding none and detailed correct responses.

    Holds when the mean nuclear norm (over q, k, v, o) of no CoT exceeds that of detailed CoT
    both over the early layers and over all layers. The ratios are reported so that "most of all
    in early layers" can be read off; it is not part of the verdict.
    """
    rows = []
    correct = curves[curves["responses"] == CORRECT]
    for (model, dataset), group in correct.groupby(["model", "dataset"], sort=True):
        if dataset == WIKI_DATASET or not {"none", "detailed"} <= set(group["setting"]):
            continue
        early = layer_splits(int(group["n_layers"].iloc[0]))["early"]
        e_none, e_det = (_mean_value(curves, model, dataset, s, early) for s in ("none", "detailed"))
        a_none, a_det = (_mean_value(curves, model, dataset, s) for s in ("none", "detailed"))
        numbers = (f"early: none {_fmt(e_none)} vs detailed {_fmt(e_det)} "
                   f"(x{_fmt(e_none / e_det)}); all: none {_fmt(a_none)} vs detailed "
                   f"{_fmt(a_det)} (x{_fmt(a_none / a_det)})")
        holds = bool(e_none > e_det and a_none > a_det) if _decided(e_none, e_det, a_none, a_det) else None
        rows.append(_finding("F1", F1_CLAIM, model, dataset, numbers, holds))
    return rows


def _f2_rows(mads: pd.DataFrame) -> list[dict]:
    """F2 per reasoning dataset with at least two of none/simplified/detailed (correct responses).

    Holds when, for each of q, k, v and o, the all-layer MAD strictly decreases along
    none > simplified > detailed over the settings present (MATH has no none setting).
    """
    rows = []
    correct = mads[(mads["responses"] == CORRECT) & (mads["dataset"] != WIKI_DATASET)]
    for (model, dataset), group in correct.groupby(["model", "dataset"], sort=True):
        settings = [s for s in REASONING_SETTINGS if s in set(group["setting"])]
        if len(settings) < 2:
            continue
        parts, verdicts = [], []
        for proj in _proj_order(group["proj"]):
            by_setting = group[group["proj"] == proj].set_index("setting")["all"]
            values = [float(by_setting.get(s, np.nan)) for s in settings]
            parts.append(f"{proj}: " + " > ".join(_fmt(v) for v in values))
            verdicts.append(bool(np.all(np.diff(values) < 0)) if _decided(*values) else None)
        holds = None if None in verdicts else all(verdicts)
        numbers = "MAD " + "/".join(settings) + ": " + "; ".join(parts)
        rows.append(_finding("F2", F2_CLAIM, model, dataset, numbers, holds))
    return rows


def _rd_by_setting(rds: pd.DataFrame, model: str, dataset: str, setting: str) -> tuple[float, float]:
    """Mean |RD| and mean signed RD over projections of one (model, dataset, setting)."""
    sel = rds[(rds["model"] == model) & (rds["dataset"] == dataset) & (rds["setting"] == setting)]
    if sel.empty:
        return np.nan, np.nan
    return float(sel["mean_abs_rd"].mean()), float(sel["mean_rd"].mean())


def _f3_rows(rds: pd.DataFrame) -> list[dict]:
    """F3 per reasoning dataset with correct and irrelevant responses under none and detailed.

    Holds when mean |RD| (averaged over q, k, v, o) of detailed CoT exceeds that of no CoT and
    the mean signed RD of detailed CoT is positive (irrelevant responses larger on average).
    """
    rows = []
    for (model, dataset), group in rds.groupby(["model", "dataset"], sort=True):
        if dataset == WIKI_DATASET or not {"none", "detailed"} <= set(group["setting"]):
            continue
        none_abs, _ = _rd_by_setting(rds, model, dataset, "none")
        det_abs, det_signed = _rd_by_setting(rds, model, dataset, "detailed")
        numbers = (f"mean |RD| none {_fmt(none_abs)}, detailed {_fmt(det_abs)}; "
                   f"mean RD detailed {_fmt(det_signed)}")
        holds = bool(det_abs > none_abs and det_signed > 0) if _decided(none_abs, det_abs, det_signed) else None
        rows.append(_finding("F3", F3_CLAIM, model, dataset, numbers, holds))
    return rows


def _common_prefix_length(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def default_model_pairs(templates: dict[str, str]) -> dict[str, str]:
    """Pair each instruct model with the base model whose name shares its longest prefix.

    `templates` maps model name -> "base" | "instruct". Returns instruct -> base. Ties go to the
    alphabetically first base model.
    """
    bases = sorted(m for m, t in templates.items() if t == "base")
    if not bases:
        return {}
    return {m: max(bases, key=lambda b: (_common_prefix_length(m, b), -bases.index(b)))
            for m, t in sorted(templates.items()) if t == "instruct"}


def _f4_rows(rds: pd.DataFrame, templates: dict[str, str], pairs: dict[str, str] | None) -> list[dict]:
    """F4 per instruct/base pair: one row per reasoning dataset both ran under detailed CoT, and
    one row (scope "all") averaging those datasets.

    Holds when the instruct model's mean |RD| (detailed CoT, averaged over q, k, v, o) is not
    larger than the base model's.
    """
    rows = []
    pairs = default_model_pairs(templates) if pairs is None else pairs
    detailed = rds[(rds["setting"] == "detailed") & (rds["dataset"] != WIKI_DATASET)]
    for instruct, base in pairs.items():
        per_model = {m: detailed[detailed["model"] == m].groupby("dataset")["mean_abs_rd"].mean()
                     for m in (instruct, base)}
        datasets = sorted(set(per_model[instruct].index) & set(per_model[base].index))
        if not datasets:
            continue
        scopes = [(d, [d]) for d in datasets] + [("all", datasets)]
        for scope, names in scopes:
            ins = float(per_model[instruct][names].mean())
            bas = float(per_model[base][names].mean())
            numbers = f"mean |RD| detailed: instruct {_fmt(ins)} vs base ({base}) {_fmt(bas)}"
            holds = bool(ins <= bas) if _decided(ins, bas) else None
            rows.append(_finding("F4", F4_CLAIM, instruct, scope, numbers, holds))
    return rows


def _mad_ratio(all_mad: pd.DataFrame, dataset: str, slow: str, fast: str) -> float:
    """Mean over projections of MAD(slow) / MAD(fast) for one dataset of a (dataset, proj) x
    setting table of all-layer MADs; NaN when a setting is missing."""
    if (dataset not in all_mad.index.get_level_values("dataset")
            or slow not in all_mad.columns or fast not in all_mad.columns):
        return np.nan
    sel = all_mad.xs(dataset, level="dataset")
    return float((sel[slow] / sel[fast]).mean())


def _f5_rows(mads: pd.DataFrame, rds: pd.DataFrame) -> list[dict]:
    """F5 per model with Wiki data (scope "wiki"). Two parts, both must hold:

    (a) the all-layer MAD ratio len1000 / len100 (correct responses, averaged over q, k, v, o
        ratios) is not smaller than the fast/slow factor: the mean over reasoning datasets of
        MAD(detailed) / MAD(none) for the same model, or WIKI_FALLBACK_MAD_RATIO without
        reasoning data;
    (b) the mean |RD| over the Wiki settings is smaller than the mean |RD| of detailed CoT on
        the reasoning datasets, or than WIKI_FALLBACK_RD without reasoning data.
    `holds` is None when a part cannot be computed (e.g. no len100 or no irrelevant responses).
    """
    rows = []
    wiki_models = sorted(set(mads.loc[mads["dataset"] == WIKI_DATASET, "model"]))
    for model in wiki_models:
        m = mads[(mads["model"] == model) & (mads["responses"] == CORRECT)]
        all_mad = m.pivot_table(index=["dataset", "proj"], columns="setting", values="all")

        wiki_ratio = _mad_ratio(all_mad, WIKI_DATASET, "len1000", "len100")
        reasoning = sorted(set(all_mad.index.get_level_values("dataset")) - {WIKI_DATASET})
        reasoning_ratios = [_mad_ratio(all_mad, d, "detailed", "none") for d in reasoning]
        reasoning_ratios = [x for x in reasoning_ratios if np.isfinite(x)]
        mad_bar = float(np.mean(reasoning_ratios)) if reasoning_ratios else WIKI_FALLBACK_MAD_RATIO

        r = rds[rds["model"] == model]
        wiki_rd = float(r.loc[r["dataset"] == WIKI_DATASET, "mean_abs_rd"].mean())
        det = r[(r["dataset"] != WIKI_DATASET) & (r["setting"] == "detailed")]
        rd_bar = float(det["mean_abs_rd"].mean()) if len(det) else WIKI_FALLBACK_RD

        numbers = (f"MAD len1000/len100 {_fmt(wiki_ratio)} vs bar {_fmt(mad_bar)}"
                   f"{'' if reasoning_ratios else ' (fallback)'}; mean |RD| wiki {_fmt(wiki_rd)}"
                   f" vs bar {_fmt(rd_bar)}{'' if len(det) else ' (fallback)'}")
        decided = _decided(wiki_ratio, wiki_rd, rd_bar)
        holds = bool(wiki_ratio >= mad_bar and wiki_rd < rd_bar) if decided else None
        rows.append(_finding("F5", F5_CLAIM, model, WIKI_DATASET, numbers, holds))
    return rows


FINDING_COLUMNS = ["check", "claim", "model", "scope", "numbers", "holds"]


def findings(df: pd.DataFrame, pairs: dict[str, str] | None = None) -> pd.DataFrame:
    """The paper's checks F1-F5 (study section 6) on nuclear norms, as far as `df` covers them.

    One row per (check, model, scope) with the numbers behind the verdict and `holds`
    (True/False, or None when the numbers cannot decide). Rows appear only for the checks the
    data covers: F1/F3 need none and detailed CoT, F2 two of none/simplified/detailed, F4 a base
    and an instruct model (paired by `pairs`, instruct -> base, or by `default_model_pairs`),
    F5 Wiki data. Each helper's docstring states its rule.
    """
    curves = layer_curves(df, "nuclear_norm")
    mads = mad_table_from_curves(curves)
    rds = rd_table_from_curves(curves)
    templates = (df.groupby("model")["template"].first().to_dict() if "template" in df.columns else {})
    rows = (_f1_rows(curves) + _f2_rows(mads) + _f3_rows(rds) + _f4_rows(rds, templates, pairs)
            + _f5_rows(mads, rds))
    out = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    out["holds"] = out["holds"].astype(object)
    return out.sort_values(["check", "model", "scope"], ignore_index=True, kind="stable")
