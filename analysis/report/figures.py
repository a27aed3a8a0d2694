"""Which figures a page shows, built from the bootstrap curves and the findings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.checks import PER_PAIR, REGISTRY, Registry, all_ids, get, selected
from analysis.core import vocabulary
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.intervals import t_band
from analysis.findings.pooling import scope_rank
from analysis.findings.rules import DISAGREE, Finding, NoteKind, Role
from analysis.report import cells, plots, voice
from analysis.report.load import figure_note

# Where a pooled cell's datasets' values lie on opposite sides of its bound, none decided apart.
OPPOSITE_WAYS = "its datasets point opposite ways"


def curves_and_bands(draws: dict[str, CurveDraws]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean curves (``metrics.layer_curves`` layout) and per-layer 95% bands for plotting."""
    curve_rows, band_rows = [], []
    for model, cd in draws.items():
        layers = np.arange(cd.n_layers)
        for (condition, proj, stat), estimate in cd.estimate.items():
            dataset, setting, responses = cd.conditions[condition]
            key = (condition, proj, stat)
            low, high = t_band(estimate, cd.draws[key], cd.n_samples[key], cd.level)
            curve_rows.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "dataset": dataset,
                        "setting": setting,
                        "responses": responses,
                        "condition": condition,
                        "proj": proj,
                        "layer": layers,
                        "value": estimate,
                        "stat": stat,
                        "n_samples": cd.n_samples[key],
                    }
                )
            )
            band_rows.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "condition": condition,
                        "proj": proj,
                        "layer": layers,
                        "stat": stat,
                        "low": low,
                        "high": high,
                    }
                )
            )
    curves = pd.concat(curve_rows, ignore_index=True) if curve_rows else pd.DataFrame()
    bands = pd.concat(band_rows, ignore_index=True) if band_rows else pd.DataFrame()
    return curves, bands


def paper_figures(
    draws: dict[str, CurveDraws],
    curves: pd.DataFrame,
    bands: pd.DataFrame,
    *,
    n_samples: int | None = None,
    stats: Sequence[str] = ("nuclear_norm", "sigma1_ratio"),
    datasets: Sequence[str] | None = None,
) -> Iterator[tuple[str, Figure]]:
    """The paper's figure per (model, dataset): nuclear norm per layer for q, k, v, o, one panel
    per setting (correct responses, shared y-scale), s1 ratio in the second row, with 95% bands."""
    for model, cd in draws.items():
        for dataset in cd.datasets():
            if datasets is not None and dataset not in datasets:
                continue
            conditions = [cd.condition_key(dataset, s) for s in cd.settings(dataset)]
            if conditions:
                yield (
                    f"{model}, {dataset}",
                    plots.curve_grid(curves, model, conditions, stats, bands=bands, note=figure_note(model, n_samples)),
                )


def length_control_figures(
    draws: dict[str, CurveDraws], curves: pd.DataFrame, bands: pd.DataFrame, n_samples: int | None = None
) -> Iterator[tuple[str, Figure]]:
    """Per (model, dataset) with a length-control condition: nuclear-norm curves of the reference
    settings next to Detailed CoT cut to their response lengths (correct responses)."""
    order = ("none", "detailed_cut_none", "simplified", "detailed_cut_simplified", "detailed")
    for model, cd in draws.items():
        for dataset in cd.datasets():
            present = cd.settings(dataset, study_only=False)
            if not set(present) & set(vocabulary.CUT_SETTINGS):
                continue
            conditions = [cd.condition_key(dataset, s) for s in order if s in present]
            yield (
                f"{model}, {dataset}",
                plots.curve_grid(
                    curves, model, conditions, ("nuclear_norm",), bands=bands, note=figure_note(model, n_samples)
                ),
            )


def pair_figures(
    draws: dict[str, CurveDraws],
    pairs: dict[str, str],
    curves: pd.DataFrame,
    bands: pd.DataFrame,
    *,
    stat: str = "nuclear_norm",
    n_samples: int | None = None,
    datasets: Sequence[str] | None = None,
) -> Iterator[tuple[str, Figure]]:
    """Per (base, instruct) pair and dataset: one row of panels per model, one column per setting
    (``datasets``: those shown; None: all)."""
    for instruct, base in pairs.items():
        if base not in draws or instruct not in draws:
            continue
        for dataset in draws[base].datasets():
            if datasets is not None and dataset not in datasets:
                continue
            settings = [s for s in draws[base].settings(dataset) if s in draws[instruct].settings(dataset)]
            if not settings:
                continue
            conditions = [f"{dataset}/{s}/{vocabulary.CORRECT}" for s in settings]
            fig = plots.model_grid(
                curves,
                [base, instruct],
                conditions,
                stat=stat,
                bands=bands,
                note=figure_note([base, instruct], n_samples),
            )
            yield f"{base} vs {instruct}, {dataset}", fig


def headline_figure(
    draws: dict[str, CurveDraws], curves: pd.DataFrame, bands: pd.DataFrame, n_samples: int | None = None
) -> Figure | None:
    """The study's answer in one figure: nuclear-norm curves of the first reasoning dataset with
    all three CoT settings, one row per model, None / Simplified / Detailed CoT side by side."""
    for dataset in vocabulary.DATASET_ORDER:
        models = [
            m for m, cd in draws.items() if all(cd.has(cd.condition_key(dataset, s)) for s in vocabulary.COT_SETTINGS)
        ]
        if models:
            conditions = [f"{dataset}/{s}/{vocabulary.CORRECT}" for s in vocabulary.COT_SETTINGS]
            return plots.model_grid(
                curves, models, conditions, stat="nuclear_norm", bands=bands, note=figure_note(models, n_samples)
            )
    return None


def verdict_svg(
    findings: Sequence[Finding], *, pairs: dict[str, str] | None = None, registry: Registry = REGISTRY
) -> str | None:
    """The verdict matrix as inline SVG that fits its column: check x scope (families first, then
    datasets), one panel per model, the checks in the registry's order, each cell printing the size of
    the part that decided its colour (``cell_text``); hovering a cell shows its verdict, every part
    with its interval, and n (``cell_title``); its accessible name (``matrix_label``) counts the
    verdicts. ``pairs`` (instruct -> base): the base model's row of a check of base-instruct pairs
    (F4) says it is decided on its instruct model."""
    if not findings:
        return None
    table = verdict_cells(findings, registry)
    fig = _matrix(table, note=None, pairs=pairs, registry=registry)
    svg = plots.titled_svg(fig, plots.cell_titles(table), label=matrix_label(table, registry))
    plt.close(fig)
    return svg


def _matrix(cells_: pd.DataFrame, *, note: str | None, pairs: dict[str, str] | None, registry: Registry) -> Figure:
    """The matrix figure of ``verdict_cells``' table."""
    scopes = _matrix_scopes(cells_)
    checks = _matrix_checks(cells_, registry)
    row_notes: dict[tuple[str, str], str] = {
        (base, check.id): f"decided on its instruct model ({instruct})"
        for check in selected(checks, registry)
        if check.scope == PER_PAIR
        for instruct, base in (pairs or {}).items()
        if instruct in set(cells_.loc[cells_["check"] == check.id, "model"]) and base in set(cells_["model"])
    }
    labels = {s: voice.scope(s, True) for s in scopes}
    return plots.verdict_matrix(cells_, checks, scopes, scope_labels=labels, note=note, row_notes=row_notes)


def _matrix_scopes(table: pd.DataFrame) -> list[str]:
    """The matrix's columns: families first, then datasets in the book's order."""
    return sorted(table["scope"].unique(), key=scope_rank)


def _matrix_checks(table: pd.DataFrame, registry: Registry) -> list[str]:
    """The matrix's rows: the checks of ``table`` in the registry's order."""
    return [c for c in all_ids(registry) if c in set(table["check"])]


def verdict_cells(findings: Sequence[Finding], registry: Registry = REGISTRY) -> pd.DataFrame:
    """The matrix's table, one row per finding: check, model, scope, verdict, n, opposite_sign, what the
    cell prints (text) and its hover text (title)."""
    return pd.DataFrame(
        {
            "check": [f.check for f in findings],
            "model": [f.model for f in findings],
            "scope": [f.scope for f in findings],
            "pooled": [f.pooled for f in findings],
            "verdict": [str(f.verdict) for f in findings],
            "n": [f.n for f in findings],
            "opposite_sign": [any(p.opposite for p in f.parts) for f in findings],
            "text": [cell_text(f, registry) for f in findings],
            "title": [cell_title(f, findings, registry) for f in findings],
        }
    )


def cell_text(finding: Finding, registry: Registry = REGISTRY) -> str:
    """A cell's text: "n/a" where the check does not apply; else the size of the part that decided
    its colour (``cells.printed``; its n where that part has no value; where a family's datasets
    disagree, the sizes of the datasets at its two ends, ``voice.opposite_ends``); "±" after it where
    the paper's mean nuclear norm and the geometric mean point opposite ways (one ratio above 1, the
    other below)."""
    if finding.not_applicable is not None:
        return "n/a"
    part = cells.printed(finding, registry)
    if part is not None and finding.verdict is DISAGREE:
        text = voice.opposite_ends(part)
    elif part is not None and np.isfinite(part.value):
        text = voice.sized(part, interval=False)
    else:
        text = f"n={finding.n}"
    return text + ("±" if any(p.opposite for p in finding.parts) else "")


def cell_title(finding: Finding, findings: Sequence[Finding] = (), registry: Registry = REGISTRY) -> str:
    """A cell's hover text: its check, scope and verdict; each deciding part in the claim's words with
    its own verdict, size and interval (where a family's datasets disagree on it, each one's size,
    interval and outcome); the parts shown beside it; where the datasets of a pooled cell lie on
    opposite sides undecided, each one's size; its notes on the family's datasets; and n. Where the
    check does not apply, why."""
    pieces = [f"{finding.check}, {voice.scope(finding.scope, True)}: {finding.verdict}"]
    if finding.not_applicable is not None:
        return "; ".join([*pieces, voice.explained(finding.not_applicable), f"n = {finding.n}"])
    check = get(finding.check, registry)
    for part in finding.deciding:
        words = check.part_words(part.role) or voice.part_label(part)
        verdict = cells.part_verdict(part, finding)
        each = f" ({voice.dataset_sizes(part, interval=True)})" if verdict is DISAGREE else ""
        pieces.append(f"{words}: {verdict}, {voice.sized(part)}{each}")
    beside = [
        f"{voice.part_label(p)} {voice.sized(p)}" for p in finding.parts if not p.decides and p.estimate is not None
    ]
    if beside:
        pieces.append("beside: " + ", ".join(beside))
    split = cells.disagreeing(finding, findings, registry)
    if split:
        times = voice.reads_as_times([p.shown()[0] for _, p in split])  # the datasets' sizes in one style
        pieces.append(
            f"{OPPOSITE_WAYS}: " + ", ".join(f"{d} {voice.sized(p, interval=False, times=times)}" for d, p in split)
        )
    family = finding.note(NoteKind.FAMILY_DATASETS)
    if family is not None:
        pieces.append(family.text)
    pieces.append(f"n = {finding.n}")
    if any(p.opposite for p in finding.parts):
        pieces.append(
            "± the paper's mean nuclear norm and the geometric mean point opposite ways (one ratio above 1, the other below)"
        )
    return "; ".join(pieces)


def matrix_label(table: pd.DataFrame, registry: Registry = REGISTRY) -> str:
    """The matrix's accessible name, from its cells: which checks, which models, how the cells went."""
    checks = ", ".join(_matrix_checks(table, registry))
    models = " and ".join(dict.fromkeys(table["model"]))
    return (
        f"Verdict matrix of {checks} for {models}, pooled per family and per dataset; "
        f"cells: {voice.verdict_counts(table['verdict'])}"
    )


def instruction_counts(findings: Sequence[Finding], registry: Registry = REGISTRY) -> pd.DataFrame:
    """The instructions behind each cell of the verdict matrix (n): one row per model and check,
    one column per scope as the matrix orders and names them, blank where it has no cell."""
    table = verdict_cells(findings, registry)
    scopes = _matrix_scopes(table)
    rows = []
    for model in dict.fromkeys(table["model"]):
        mine = table[table["model"] == model]
        for check in _matrix_checks(mine, registry):
            n = dict(zip(mine.loc[mine["check"] == check, "scope"], mine.loc[mine["check"] == check, "n"]))
            rows.append(
                {"model": model, "check": check}
                | {voice.scope(s, True): str(int(n[s])) if s in n else "" for s in scopes}
            )
    return pd.DataFrame(rows)


def part_forest(
    findings: Sequence[Finding],
    role: Role,
    x_label: str,
    *,
    reference: float | None = None,
    log_x: bool = False,
    note: str | None = None,
) -> Figure | None:
    """One part of a check, found by its role (e.g. the length share), per model and scope, with
    its interval."""
    found = [(f, p) for f in findings if (p := f.part(role)) is not None]
    if not found:
        return None
    found.sort(key=lambda fp: (fp[0].model, scope_rank(fp[0].scope)))
    shown = [p.shown() for _, p in found]
    table = pd.DataFrame(
        {
            "label": [voice.scope(f.scope, f.pooled) for f, _ in found],
            "value": [v for v, _, _ in shown],
            "low": [lo for _, lo, _ in shown],
            "high": [hi for _, _, hi in shown],
            "group": [f.model for f, _ in found],
        }
    )
    return plots.forest(table, reference=reference, x_label=x_label, log_x=log_x, note=note)


def separability_forest(table: pd.DataFrame, note: str | None = None) -> Figure | None:
    """Out-of-fold AUROC per (model, scope, setting) with its interval; 0.5 is chance."""
    if table.empty:
        return None
    rows = table[np.isfinite(table["auroc"].astype(float))]
    if rows.empty:
        return None
    forest = pd.DataFrame(
        {
            "label": [
                f"{voice.scope(s, p)}, {vocabulary.setting_label(t)}"
                for s, p, t in zip(rows["scope"], rows["pooled"], rows["setting"])
            ],
            "value": rows["auroc"].to_numpy(float),
            "low": rows["auroc_low"].to_numpy(float),
            "high": rows["auroc_high"].to_numpy(float),
            "group": rows["model"].to_numpy(),
        }
    )
    return plots.forest(forest, reference=0.5, x_label="AUROC, correct vs irrelevant (out of fold)", note=note)
