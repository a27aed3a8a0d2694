"""Figures of layer curves, verdicts and intervals. Drawing only: the numbers come from
the callers (mean curves and bands of analysis.findings.bootstrap, verdicts of analysis.findings)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.artist import Artist
from matplotlib.figure import Figure

from analysis.core import vocabulary
from analysis.findings.rules import Verdict

PROJ_COLOURS = {"q": "r", "k": "g", "v": "b", "o": "gray"}
SETTING_LABELS = vocabulary.SETTING_LABELS
STAT_LABELS = vocabulary.STAT_LABELS
# Keyed on the verdict itself, never its English word (a cell's verdict, a member or its value, is
# read back as ``Verdict(value)``); the legend prints each verdict's word, in this order.
VERDICT_COLOURS: dict[Verdict, str] = {
    Verdict.HOLDS: "#4daf4a",
    Verdict.FAILS: "#e41a1c",
    Verdict.DISAGREE: "#984ea3",  # purple: a finding, unlike grey, and no claim shown false, unlike red
    Verdict.UNRESOLVED: "#bdbdbd",
    Verdict.TOO_FEW: "#fdd49e",
    Verdict.NOT_APPLICABLE: "#ffffff",  # white with a hatch and a dash: the check does not apply
}
# verdicts drawn with a mark as well as a colour, so that they are not read as "not resolved"
VERDICT_HATCHES: dict[Verdict, str] = {Verdict.NOT_APPLICABLE: "////"}
# verdicts in the legend only where some cell has them (the others always are)
LEGEND_WHERE_SHOWN = (Verdict.NOT_APPLICABLE, Verdict.DISAGREE)


# The book's text column in inches at the 100 dpi the figures are drawn at (676 px inside the
# article's padding in a 1280 px window): a figure of this width is shown at its own size, its text
# at the size it is drawn (8 pt and up). Panels side by side share it; more go on more rows.
COLUMN_INCHES = 6.7
PANEL_INCHES = 3.7  # the widest a panel is drawn
NOTE_POINTS = 8
NOTE_LINE_INCHES = 0.14  # the height of a line of a figure's note


def _note_lines(fig: Figure, note: str | None) -> list[str]:
    """``note`` wrapped to the figure's width at ``NOTE_POINTS``."""
    return textwrap.wrap(note, width=max(40, int(fig.get_size_inches()[0] * 15))) if note else []


def add_note(fig: Figure, note: str | None) -> float:
    """Write ``note`` under the figure, wrapped to the figure's width; the height share it takes."""
    lines = _note_lines(fig, note)
    if not lines:
        return 0.0
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=NOTE_POINTS, va="bottom")
    return min(0.3, NOTE_LINE_INCHES * len(lines) / fig.get_size_inches()[1] + 0.01)


def panel_rows(n: int, *, per_row: int = 2) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels: at most ``per_row`` side by side, the rows as even
    as they can be."""
    rows = max(1, -(-n // per_row))
    return rows, max(1, -(-n // rows))


def panels_size(rows: int, columns: int, *, height: float) -> tuple[float, float]:
    """The size in inches of a figure of rows x columns panels: the column's width shared by the
    panels (each at most ``PANEL_INCHES``), ``height`` per row."""
    return min(COLUMN_INCHES, PANEL_INCHES * columns), height * rows


def drop_unused(axes: np.ndarray, used: int) -> None:
    """Remove the panels of a grid after the first ``used`` (a last row that is not full)."""
    for ax in axes.flat[used:]:
        ax.remove()


def legend_below(fig: Figure, *, title: str | None = None, note: str | None = None) -> Figure:
    """Lay out a figure with one legend of its panels' labelled lines and bars (each label once)
    under the panels and over the note, and its title above them, the figure grown by their height:
    a legend inside a narrow panel would hide its bars or lines."""
    named: dict[str, Artist] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            named.setdefault(label, handle)
    width, height = fig.get_size_inches()
    legend = 0.2 * -(-len(named) // 2) + 0.1 if named else 0.0
    top = 0.25 if title else 0.0
    fig.set_size_inches(width, height + legend + top + 0.14 * len(_note_lines(fig, note)))
    height = fig.get_size_inches()[1]
    bottom = add_note(fig, note)
    if named:
        fig.legend(
            list(named.values()),
            list(named),
            loc="lower center",
            bbox_to_anchor=(0.5, bottom),
            ncol=2,
            fontsize=8,
            frameon=False,
        )
    if title:
        fig.suptitle(title, fontsize=10, y=1 - 0.05 / height, va="top")
    fig.tight_layout(rect=(0, bottom + legend / height, 1, 1 - top / height), pad=0.5)
    return fig


def condition_title(condition: str) -> str:
    """Readable title of a "dataset/setting/responses" key, e.g. "aqua: Detailed CoT"."""
    dataset, setting, responses = condition.split("/")
    title = f"{dataset}: {SETTING_LABELS.get(setting, setting)}"
    return title if responses == "correct" else f"{title} ({responses})"


def _select(table: pd.DataFrame, model: str, condition: str, stat: str) -> pd.DataFrame:
    sel = table[(table["model"] == model) & (table["condition"] == condition)]
    if "stat" in sel.columns:
        sel = sel[sel["stat"] == stat]
    return sel


def _draw_curves(ax, curves: pd.DataFrame, bands: pd.DataFrame | None) -> None:
    for proj, colour in PROJ_COLOURS.items():
        line = curves[curves["proj"] == proj].sort_values("layer")
        if line.empty:
            continue
        ax.plot(line["layer"], line["value"], color=colour, lw=1.2, label=proj.upper())
        if bands is not None:
            band = bands[bands["proj"] == proj].sort_values("layer")
            if not band.empty:
                ax.fill_between(band["layer"], band["low"], band["high"], color=colour, alpha=0.2, lw=0)


# A layer-curve panel in inches (width, height): three side by side fill the column.
GRID_PANEL = (2.2, 2.1)


def _grid(
    rows: Sequence[tuple[str, str, str]],
    conditions: Sequence[str],
    curves: pd.DataFrame,
    bands: pd.DataFrame | None,
    *,
    note: str | None,
    title: str | None = None,
) -> Figure:
    """Panels of layer curves: per (model, stat, y label) of ``rows``, one panel per condition, at
    most three side by side (more go on a second line), Q/K/V/O lines with optional bands; the
    panels of a row share their y-scale."""
    wraps, per_row = panel_rows(len(conditions), per_row=3)
    fig, axes = plt.subplots(
        len(rows) * wraps,
        per_row,
        figsize=(GRID_PANEL[0] * per_row, GRID_PANEL[1] * len(rows) * wraps),
        squeeze=False,
    )
    for i, (model, stat, label) in enumerate(rows):
        group = axes[i * wraps : (i + 1) * wraps].flat
        for j, condition in enumerate(conditions):
            ax = group[j]
            if j:
                ax.sharex(group[0])
                ax.sharey(group[0])
            selected = _select(curves, model, condition, stat)
            if selected.empty:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            _draw_curves(ax, selected, None if bands is None else _select(bands, model, condition, stat))
            if i == 0 or wraps > 1:
                ax.set_title("\n".join(textwrap.wrap(condition_title(condition), 28)), fontsize=9)
            below = j + per_row < len(conditions)  # a panel of the same row under this one
            ax.tick_params(labelleft=j % per_row == 0, labelbottom=not below, labelsize=8)
            if j % per_row == 0:
                ax.set_ylabel(label, fontsize=8)
            if i == len(rows) - 1 and not below:
                ax.set_xlabel("layer", fontsize=9)
        drop_unused(axes[i * wraps : (i + 1) * wraps], len(conditions))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    bottom = add_note(fig, note)
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.3 / fig.get_size_inches()[1]))
    return fig


def curve_grid(
    curves: pd.DataFrame,
    model: str,
    conditions: Sequence[str],
    stats: Sequence[str],
    *,
    bands: pd.DataFrame | None = None,
    note: str | None = None,
) -> Figure:
    """Layer curves of one model: one column per condition, one row per statistic, Q/K/V/O lines
    (red, green, blue, gray), with optional bands. The panels of a row share their y-scale, so
    that the settings' magnitudes compare at a glance.

    `curves`: mean curves (rows of several statistics told apart by a `stat` column); `bands`:
    per-layer low/high in the same layout; `note`: a line printed under the figure.
    """
    rows = [(model, stat, STAT_LABELS.get(stat, stat)) for stat in stats]
    return _grid(rows, conditions, curves, bands, note=note, title=model)


def model_grid(
    curves: pd.DataFrame,
    models: Sequence[str],
    conditions: Sequence[str],
    *,
    stat: str = "nuclear_norm",
    bands: pd.DataFrame | None = None,
    note: str | None = None,
) -> Figure:
    """Layer curves of one statistic for several models: one row per model (e.g. a base model
    above its instruct version), one column per condition. A row shares its y-scale across
    conditions; rows have their own, since models differ in scale."""
    rows = [(model, stat, f"{model}\n{STAT_LABELS.get(stat, stat)}") for model in models]
    return _grid(rows, conditions, curves, bands, note=note)


# The verdict matrix's type sizes (points): at least 8 where the figure is shown at its column's width.
MATRIX_FONT = {"cell": 9, "check": 10, "scope": 9, "title": 10, "legend": 9, "row_note": 9}
# The width of a page's column at a 1280 px window (676 px, 96 px an inch): the matrix is drawn that
# wide, so that shown at its column's width it keeps its type sizes; its cells share what is left
# beside the check labels.
COLUMN_INCHES = 7.0
ROW_INCHES = 0.42  # the height of a row of cells
LEGEND_INCHES = 0.35  # the legend's row above the panels
MATRIX_MIN_ROWS = 3  # a matrix of fewer checks is as tall as this many rows: its scope labels need the room
CELL_ID = "verdict-cell-{}"  # the SVG id of a cell: its row's position in the matrix's table


def verdict_matrix(
    table: pd.DataFrame,
    checks: Sequence[str],
    scopes: Sequence[str],
    *,
    scope_labels: dict[str, str] | None = None,
    note: str | None = None,
    row_notes: dict[tuple[str, str], str] | None = None,
) -> Figure:
    """One panel per model, one above the other: a check x scope grid coloured by verdict (blank:
    not covered), each cell's text in it (column text, e.g. its headline size; else the number of
    instructions behind the verdict, followed by "±" where the paper's mean nuclear norm and the
    geometric mean point opposite ways, column opposite_sign). Each cell's patch has the SVG id
    ``CELL_ID`` of its row's position in ``table`` (``cell_titles``).

    `table`: findings with columns check, model, scope, verdict, n. `row_notes`: (model, check) ->
    a line written across that row instead of cells (e.g. a check decided on another model).
    """
    table = table.assign(_id=[CELL_ID.format(k) for k in range(len(table))])
    models = list(dict.fromkeys(table["model"]))
    labels = [(scope_labels or {}).get(s, s) for s in scopes]
    height = (ROW_INCHES * max(len(checks), MATRIX_MIN_ROWS) + 2.0) * len(models) + 0.4
    fig, axes = plt.subplots(len(models), 1, figsize=(COLUMN_INCHES, height), squeeze=False)
    height += NOTE_LINE_INCHES * len(_note_lines(fig, note))  # room for the note, so the panels keep theirs
    fig.set_size_inches(COLUMN_INCHES, height)
    for ax, model in zip(axes[:, 0], models):
        _verdict_cells(ax, table[table["model"] == model].set_index(["check", "scope"]), checks, scopes)
        for i, check in enumerate(checks):
            text = (row_notes or {}).get((model, check))
            if text:
                ax.text(
                    0.05,
                    i + 0.45,
                    text,
                    ha="left",
                    va="center",
                    fontsize=MATRIX_FONT["row_note"],
                    style="italic",
                    color="#555555",
                )
        _grid_axes(ax, checks, labels, model)
    _verdict_legend(fig, {Verdict(v) for v in table["verdict"]})
    bottom = add_note(fig, note)
    fig.tight_layout(rect=(0, bottom, 1, 1 - LEGEND_INCHES / height))
    return fig


def _verdict_legend(fig: Figure, verdicts: set[Verdict]) -> None:
    """The colours of the verdicts over the panels (``LEGEND_WHERE_SHOWN`` only where some cell has it)."""
    shown = [v for v in VERDICT_COLOURS if v in verdicts or v not in LEGEND_WHERE_SHOWN]
    handles = [
        plt.Rectangle(
            (0, 0),
            1,
            1,
            facecolor=VERDICT_COLOURS[v],
            hatch=VERDICT_HATCHES.get(v),
            edgecolor="#6a3d9a" if v in VERDICT_HATCHES else "none",
        )
        for v in shown
    ]
    fig.legend(
        handles,
        [v.value for v in shown],
        loc="upper center",
        ncol=len(handles),
        fontsize=MATRIX_FONT["legend"],
        frameon=False,
    )


def cell_text(row: pd.Series) -> str:
    """What a matrix cell prints: its column text where the table has one, else "n/a" where the
    check does not apply, else the number of instructions and "±" where column opposite_sign says."""
    if isinstance(row.get("text"), str):
        return row["text"]
    if Verdict(row["verdict"]) in VERDICT_HATCHES:
        return "n/a"
    return str(int(row["n"])) + ("±" if row.get("opposite_sign", False) else "")


def _verdict_cells(ax, rows: pd.DataFrame, checks: Sequence[str], scopes: Sequence[str]) -> None:
    """One model's cells: coloured by verdict, with their text (``cell_text``) and their SVG ids."""
    for i, check in enumerate(checks):
        for j, scope in enumerate(scopes):
            if (check, scope) not in rows.index:
                continue
            row = rows.loc[(check, scope)]
            verdict = Verdict(row["verdict"])
            hatch = VERDICT_HATCHES.get(verdict)
            patch = plt.Rectangle(
                (j, i),
                0.94,
                0.9,
                facecolor=VERDICT_COLOURS[verdict],
                edgecolor="#6a3d9a" if hatch else "none",
                hatch=hatch,
                lw=0.8 if hatch else 0,
            )
            patch.set_gid(row["_id"])
            ax.add_patch(patch)
            ax.text(j + 0.47, i + 0.45, cell_text(row), ha="center", va="center", fontsize=MATRIX_FONT["cell"])


def _grid_axes(ax, checks: Sequence[str], labels: list[str], model: str) -> None:
    """A panel's limits, ticks, labels and title, without spines."""
    ax.set_xlim(0, len(labels))
    ax.set_ylim(len(checks), 0)
    ax.set_xticks(np.arange(len(labels)) + 0.47)
    ax.set_xticklabels(labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=MATRIX_FONT["scope"])
    ax.set_yticks(np.arange(len(checks)) + 0.45)
    ax.set_yticklabels(checks, fontsize=MATRIX_FONT["check"])
    ax.set_title(model, fontsize=MATRIX_FONT["title"])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)


def cell_titles(table: pd.DataFrame) -> dict[str, str]:
    """The hover text of each cell of ``verdict_matrix(table, ...)`` by its SVG id: column title."""
    return {CELL_ID.format(k): str(title) for k, title in enumerate(table["title"])}


SVG = "http://www.w3.org/2000/svg"


def titled_svg(fig: Figure, titles: dict[str, str], *, label: str) -> str:
    """A figure as inline SVG (HTML) that scales to its column's width: the group of each id in
    ``titles`` carries that text as its title (shown on hover), and the figure ``label`` as its
    accessible name. Deterministic: no metadata, ids salted by the label."""
    import io
    from xml.etree import ElementTree

    buffer = io.BytesIO()
    with plt.rc_context({"svg.hashsalt": label, "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    ElementTree.register_namespace("", SVG)
    ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ElementTree.fromstring(buffer.getvalue())
    for metadata in root.findall(f"{{{SVG}}}metadata"):
        root.remove(metadata)
    for group in root.iter(f"{{{SVG}}}g"):
        title = titles.get(group.get("id", ""))
        if title is not None:
            element = ElementTree.Element(f"{{{SVG}}}title")
            element.text = title
            group.insert(0, element)
    root.attrib.pop("height", None)
    root.set("width", "100%")
    root.set("style", "height: auto; display: block;")
    root.set("role", "img")
    root.set("aria-label", label)
    return ElementTree.tostring(root, encoding="unicode")


def forest(
    table: pd.DataFrame,
    *,
    reference: float | None = None,
    x_label: str = "",
    log_x: bool = False,
    note: str | None = None,
    title: str | None = None,
) -> Figure:
    """Estimates with intervals as points and bars, one row per line of `table` (columns label,
    value, low, high and optionally group, which sets the colour), a vertical line at `reference`."""
    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 0.28 * len(table) + 1.3))
    groups = list(dict.fromkeys(table["group"])) if "group" in table.columns else [None]
    palette = dict(zip(groups, sns.color_palette("colorblind", len(groups))))
    y = np.arange(len(table))
    for i, row in enumerate(table.itertuples()):
        colour = palette[getattr(row, "group", None)]
        if np.isfinite(row.low) and np.isfinite(row.high):
            ax.plot([row.low, row.high], [i, i], color=colour, lw=1.6)
        ax.plot([row.value], [i], "o", color=colour, ms=4)
    if reference is not None:
        ax.axvline(reference, color="k", lw=0.8, ls="--")
    if log_x:
        ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels(table["label"], fontsize=8)
    ax.set_ylim(len(table) - 0.5, -0.5)
    ax.set_xlabel(x_label)
    if groups != [None]:
        handles = [plt.Line2D([], [], color=palette[g], marker="o", lw=1.6) for g in groups]
        ax.legend(handles, [str(g) for g in groups], fontsize=8, loc="best", frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    bottom = add_note(fig, note)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig
