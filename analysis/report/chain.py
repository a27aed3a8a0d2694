"""Any check that declares a ``Chain`` (``findings.scopes.Chain``: a total and the steps that add up
to it), drawn from that declaration and the check's findings: a long table of every part of the
chain with its outcome (``rules.Part.outcome``, decided once), bars with intervals per model and
scope, the tables per dataset and family in each norm, the instructions a condition dropped, and the
how to read the figure. No function here knows which check it draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from analysis.checks import REGISTRY, Check, Inputs, Registry
from analysis.core import vocabulary
from analysis.core.formatting import fmt
from analysis.findings import multiplicity
from analysis.findings.bootstrap import LEVEL, CurveDraws, all_curve_draws
from analysis.findings.gap_split import dropped_table
from analysis.findings.roles import Role
from analysis.findings.rules import SAME_MARGIN_PERCENT, Finding, Outcome, Part
from analysis.findings.scopes import Chain
from analysis.report import plots, voice
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.report.blocks import Figure as FigureBlock
from analysis.report.load import ReportError, load_results
from analysis.store import ResultsStore, runlog
from analysis.store.store_files import is_exported_file, read_exported

COLUMNS = [
    "model",
    "scope",
    "pooled",
    "norm",
    "step",
    "estimate",
    "low",
    "high",
    "instructions",
    "per_dataset",
    "outcome",
    "decided",
    "datasets",
    "note",
]
EXTRACT = "python -m analysis extract"


def chain_check(registry: Registry = REGISTRY, *, among: Sequence[str] | None = None) -> Check | None:
    """The first check of ``registry`` (of ``among``, where given) that declares a chain."""
    return next((c for c in registry if c.chain is not None and (among is None or c.id in among)), None)


def _chain(check: Check) -> Chain:
    if check.chain is None:
        raise ValueError(f"check {check.id} declares no chain")
    return check.chain


def _rows(check: Check) -> list[tuple[Role, str]]:
    """(role, name) of every line of the chain's tables: the total, the steps, what stands beside."""
    chain = _chain(check)
    return [(chain.total, chain.total_name), *((s.role, s.name) for s in chain.steps), *chain.beside]


def _opposite(part: Part, finding: Finding, findings: Sequence[Finding]) -> str:
    """Where a pooled cell's datasets lie on opposite sides of 0 for this part: each one's value and
    instructions ("" where they do not, or the cell is not pooled)."""
    if not finding.pooled or finding.scope not in vocabulary.FAMILY_DATASETS:
        return ""
    members = vocabulary.FAMILY_DATASETS[finding.scope]
    values = {
        f.scope: p
        for f in findings
        if f.check == finding.check and f.model == finding.model and not f.pooled and f.scope in members
        if (p := f.part(part.role, facet=part.facet)) is not None and p.estimate is not None and math.isfinite(p.value)
    }
    signs = {np.sign(p.value) for p in values.values()}
    if not {-1.0, 1.0} <= signs:
        return ""
    each = ", ".join(f"{d} {'+' if p.value >= 0 else ''}{fmt(p.value)} ({p.n} instructions)" for d, p in values.items())
    return f"datasets on opposite sides of 0: {each}"


def table(findings: Sequence[Finding], check: Check) -> pd.DataFrame:
    """One line per model, scope, norm and line of the chain (the total, each step, what stands
    beside), in the findings' order: its estimate and interval in mean log norm, its instructions, its
    outcome and whether that is decided, the datasets behind it, and where a family's datasets lie on
    opposite sides of 0."""
    chain = _chain(check)
    lines = []
    for finding in (f for f in findings if f.check == check.id and f.not_applicable is None):
        for facet, norm in chain.norms:
            for role, name in _rows(check):
                part = finding.part(role, facet=facet)
                if part is None or part.estimate is None:
                    continue
                low, high = part.interval()
                lines.append(
                    {
                        "model": finding.model,
                        "scope": finding.scope,
                        "pooled": finding.pooled,
                        "norm": norm,
                        "step": name,
                        "estimate": part.value,
                        "low": low,
                        "high": high,
                        "instructions": part.n,
                        "per_dataset": per_dataset(part),
                        "outcome": part.outcome.value,
                        "decided": part.outcome.decided,
                        "datasets": ", ".join(part.datasets or (finding.scope,)),
                        "note": _opposite(part, finding, findings),
                    }
                )
    return _ordered(pd.DataFrame(lines, columns=COLUMNS))


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (in order of appearance): families first, then datasets in the book's order."""
    if frame.empty:
        return frame
    models = list(dict.fromkeys(frame["model"]))
    rank = frame["scope"].map(
        lambda s: (
            list(vocabulary.FAMILY_DATASETS).index(s)
            if s in vocabulary.FAMILY_DATASETS
            else 3 + vocabulary.dataset_rank(s)
        )
    )
    ordered = frame.assign(_model=frame["model"].map(models.index), _scope=rank)
    return (
        ordered.sort_values(["_model", "_scope"], kind="stable")
        .drop(columns=["_model", "_scope"])
        .reset_index(drop=True)
    )


def shares(frame: pd.DataFrame, check: Check) -> pd.DataFrame:
    """Each step's estimate as a share of the total, per model, scope and norm (point values)."""
    chain = _chain(check)
    out = []
    for (model, scope, norm), rows in frame.groupby(["model", "scope", "norm"], sort=False):
        by_step = rows.set_index("step")["estimate"]
        if chain.total_name not in by_step.index:
            continue
        total = by_step[chain.total_name]
        for step in (s.name for s in chain.steps):
            if step in by_step.index:
                out.append({"model": model, "scope": scope, "norm": norm, "step": step, "share": by_step[step] / total})
    return pd.DataFrame(out, columns=["model", "scope", "norm", "step", "share"])


def dropped(draws: Mapping[str, CurveDraws], check: Check) -> pd.DataFrame:
    """The instructions a condition of the chain lacks that another holds, per model, dataset and condition."""
    chain = _chain(check)
    return dropped_table([d for cd in draws.values() for d in chain.dropped(cd)])


# --------------------------------------------------------------------------- the figure


def figure_scopes(frame: pd.DataFrame, model: str) -> list[str]:
    """The scopes a model's panels show: its families, else (no family of two datasets) its datasets."""
    mine = frame[frame["model"] == model]
    families = [s for s in vocabulary.REASONING_FAMILIES if (mine["scope"] == s).any()]
    return families or list(dict.fromkeys(mine["scope"]))


def _datasets(frame: pd.DataFrame, model: str, scope: str) -> list[str]:
    """The datasets behind a scope of a model's chain (a dataset: itself)."""
    if scope not in vocabulary.FAMILY_DATASETS:
        return [scope]
    mine = frame[(frame["model"] == model) & ~frame["pooled"]]
    return [d for d in dict.fromkeys(mine["scope"]) if d in vocabulary.FAMILY_DATASETS[scope]]


def _scope_label(frame: pd.DataFrame, model: str, scope: str) -> str:
    """A scope as the chain's tables and sentences name it: a family by its name, unless its lines
    hold one dataset only ("aqua only (math reasoning)"); a dataset by its own."""
    held = frame.loc[(frame["model"] == model) & (frame["scope"] == scope), "datasets"]
    names = {d for line in held for d in str(line).split(", ") if d}
    if scope in vocabulary.FAMILY_DATASETS and len(names) == 1:
        return f"{names.pop()} only ({vocabulary.scope_label(scope)})"
    return vocabulary.scope_label(scope)


def panel_title(frame: pd.DataFrame, model: str, scope: str, total: str) -> str:
    """A panel's title: model, scope, its datasets and their instructions, counted per dataset as
    everywhere in the book."""
    datasets = _datasets(frame, model, scope)
    rows = frame[(frame["model"] == model) & (frame["step"] == total) & frame["scope"].isin(datasets)]
    counts = dict(zip(rows["scope"], rows["instructions"].astype(int)))
    if len(set(counts.values())) == 1:
        size = voice.plural(next(iter(counts.values())), "instruction") + (" per dataset" if len(counts) > 1 else "")
    else:
        size = ", ".join(f"{d} {n}" for d, n in counts.items()) + " instructions"
    named = f"{', '.join(datasets)}: " if scope in vocabulary.FAMILY_DATASETS else ""
    return f"{model}\n{vocabulary.scope_label(scope)}\n{named}{size}"


def _panel(ax, rows: pd.DataFrame, bars: Sequence[str], colours: dict[str, tuple]) -> None:
    """One panel: the total and its steps as horizontal bars with intervals, each labelled with its numbers."""
    rows = rows.set_index("step").reindex(list(bars))
    y = np.arange(len(bars))
    for i, (step, row) in enumerate(rows.iterrows()):
        if not np.isfinite(row["estimate"]):
            continue
        alpha = 1.0 if row["decided"] else 0.35
        ax.barh(i, row["estimate"], color=colours[str(step)], alpha=alpha, height=0.6)
        if np.isfinite(row["low"]) and np.isfinite(row["high"]):
            ax.plot([row["low"], row["high"]], [i, i], color="k", lw=1.2)
    ax.axvline(0.0, color="k", lw=0.7)
    labels = [f"{step}\n{as_times(r['estimate'], r['low'], r['high'])}" for step, r in rows.iterrows()]
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(len(bars) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=7)


def figure(frame: pd.DataFrame, check: Check, *, note: str | None = None) -> Figure | None:
    """Per model and family (or dataset where no family has two), the total and its steps in the
    chain's first norm as bars with their intervals, the numbers beside each bar's name; None without a line."""
    chain = _chain(check)
    norm = chain.norms[0][1]
    frame = frame[frame["norm"] == norm]
    if frame.empty:
        return None
    bars = (chain.total_name, *(s.name for s in chain.steps))
    panels = [(m, s) for m in dict.fromkeys(frame["model"]) for s in figure_scopes(frame, m)]
    rows, columns = plots.panel_rows(len(panels))
    fig, axes = plt.subplots(rows, columns, figsize=plots.panels_size(rows, columns, height=2.6), squeeze=False)
    palette = sns.color_palette("colorblind", len(bars))
    colours = {step: (0.3, 0.3, 0.3) if step == chain.total_name else palette[i] for i, step in enumerate(bars)}
    for ax, (model, scope) in zip(axes.flat, panels):
        _panel(ax, frame[(frame["model"] == model) & (frame["scope"] == scope)], bars, colours)
        ax.set_title(panel_title(frame, model, scope, chain.total_name), fontsize=7)
    for ax in axes[-1, :]:
        ax.set_xlabel(f"fast over slow, {norm} (log scale; x1: no change)", fontsize=8)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"x{math.exp(v):.2g}"))
    plots.drop_unused(axes, len(panels))
    bottom = plots.add_note(fig, note)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def caption(check: Check) -> str:
    """How to read ``figure``: the chain's own caption, its norm, level and margin filled in."""
    chain = _chain(check)
    return chain.caption.format(norm=chain.norms[0][1], level=f"{LEVEL:.0%}", margin=SAME_MARGIN_PERCENT)


# --------------------------------------------------------------------------- the tables


def as_times(estimate: float, low: float, high: float) -> str:
    """A gap of mean log norm as the ratio a reader reads, with its interval: "x5.99 [x4.85, x7.39]"."""
    shown = [f"x{fmt(math.exp(v))}" if math.isfinite(v) else "nan" for v in (estimate, low, high)]
    return shown[0] if not (math.isfinite(low) and math.isfinite(high)) else f"{shown[0]} [{shown[1]}, {shown[2]}]"


def per_dataset(part: Part) -> str:
    """A part's instructions counted per dataset, as everywhere in the book: "5", or "4 to 5" where its
    datasets hold different numbers."""
    counts = sorted({n for _, n in part.estimate.strata}) if part.estimate is not None else []
    if not counts:
        return ""
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def wide_table(frame: pd.DataFrame, check: Check, norm: str) -> pd.DataFrame:
    """One line per model and scope (each dataset, then each family): the total and each step as
    "xratio [xlow, xhigh] outcome" (``as_times``), what stands beside, and the instructions per dataset."""
    chain = _chain(check)
    frame = frame[frame["norm"] == norm]
    bars = {chain.total_name, *(s.name for s in chain.steps)}
    shown = [name for _, name in _rows(check) if name in set(frame["step"])]
    lines = []
    for (model, scope), rows in frame.groupby(["model", "scope"], sort=False):
        by_step = rows.set_index("step")
        line = {"model": model, "scope": _scope_label(frame, str(model), str(scope))}
        for name in shown:
            if name in by_step.index:
                row = by_step.loc[name]
                outcome = f" {row['outcome']}" if name in bars else ""
                line[name] = as_times(row["estimate"], row["low"], row["high"]) + outcome
        line["instructions per dataset"] = by_step.loc[chain.total_name, "per_dataset"]
        lines.append(line)
    return pd.DataFrame(lines)


def loss_table(findings: Sequence[Finding], check: Check) -> pd.DataFrame:
    """One line per model, scope and step (and span) with a line on the covariate: the step, its
    value at an equal covariate (the line's intercept) and the line's slope, each with its interval,
    in the chain's first norm, and the instructions per dataset."""
    chain = _chain(check)
    if chain.lines is None:
        return pd.DataFrame()
    intercept_role, slope_role = chain.lines
    facet = chain.norms[0][0]
    names = [*(s.role for s in chain.steps), *(role for role, _ in chain.beside)]
    lines = []
    for f in _ordered_findings([f for f in findings if f.check == check.id and f.not_applicable is None]):
        for role in names:
            part = f.part(role, facet=facet)
            if part is None or part.estimate is None:
                continue
            name = _name_of(check, role)
            intercept, slope = (f.part(r, facet=(name,)) for r in (intercept_role, slope_role))
            if intercept is None or slope is None:
                continue
            lines.append(
                {
                    "model": f.model,
                    "scope": vocabulary.scope_label(f.scope),
                    "step": name,
                    "the step": voice.sized(part),
                    "at equal loss": voice.sized(intercept),
                    "slope on log loss": voice.sized(slope),
                    "instructions per dataset": per_dataset(part),
                }
            )
    return pd.DataFrame(lines)


def _name_of(check: Check, role: Role) -> str:
    """The name the chain's tables give the parts of that role."""
    return next(name for r, name in _rows(check) if r is role)


def _ordered_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Per model (in order of appearance): families first, then datasets in the book's order."""
    models = list(dict.fromkeys(f.model for f in findings))

    def rank(f: Finding) -> tuple[int, int]:
        families = list(vocabulary.FAMILY_DATASETS)
        scope = families.index(f.scope) if f.scope in families else 3 + vocabulary.dataset_rank(f.scope)
        return models.index(f.model), scope

    return sorted(findings, key=rank)


def design_against_line(findings: Sequence[Finding], check: Check) -> tuple[int, int]:
    """(cells, agreeing): of the model and dataset cells that hold both, how many have the step that
    holds the covariate equal by design inside the interval of the span's intercept by regression."""
    chain = _chain(check)
    if chain.by_design is None or chain.lines is None:
        return 0, 0
    role, span = chain.by_design
    cells_, agreeing = 0, 0
    for f in findings:
        if f.check != check.id or f.pooled or f.not_applicable is not None:
            continue
        design, line = f.part(role, facet=chain.norms[0][0]), f.part(chain.lines[0], facet=(span,))
        if design is None or line is None or design.estimate is None or line.estimate is None:
            continue
        low, high = line.interval()
        cells_ += 1
        agreeing += bool(low <= design.value <= high)
    return cells_, agreeing


def multiplicity_text(findings: Sequence[Finding], frame: pd.DataFrame, check: Check) -> str:
    """How many step intervals the chain's tables print, how many would mislead at the gap rule's
    stated rate were no step to have an effect, and which family steps called larger or smaller stay
    so under Holm's correction over each model's family steps in the chain's first norm."""
    chain = _chain(check)
    names = {s.name for s in chain.steps}
    printed = frame[frame["step"].isin(names)]
    if printed.empty:
        return ""
    rate = max((r.stated for r in check.calibrated_by), default=0.025)
    chance = multiplicity.expected_false(len(printed), rate=(1 - LEVEL) / 2)
    text = (
        f"These tables print {len(printed)} step intervals (per dataset and family, in {voice.number(len(chain.norms))} "
        f"norms). Each step called larger or smaller is wrong at most {rate:.0%} of the time (the gap rule's stated "
        f"rate, under skewed samples; {1 - LEVEL:.1%} at its level otherwise): were no step to have an effect, about "
        f"{chance:.1f} of them would clear 0 by chance."
    )
    facet = chain.norms[0][0]
    kept_all: list = []
    decided_all: list = []
    dropped_: list[str] = []
    for model in dict.fromkeys(f.model for f in findings if f.check == check.id):
        steps = [
            (f.scope, s.name, p)
            for f in findings
            if f.check == check.id and f.model == model and f.pooled
            for s in chain.steps
            if (p := f.part(s.role, facet=facet)) is not None and p.estimate is not None
        ]
        directional = [(scope, name, p) for scope, name, p in steps if p.outcome in (Outcome.LARGER, Outcome.SMALLER)]
        kept = multiplicity.holm_kept([multiplicity.two_sided_p(p.estimate) for *_, p in steps])
        by_step = {(scope, name): k for (scope, name, _), k in zip(steps, kept)}
        decided_all += directional
        kept_all += [d for d in directional if by_step[(d[0], d[1])]]
        dropped_ += [f"{model} {vocabulary.scope_label(s)} {n}" for s, n, _ in directional if not by_step[(s, n)]]
    if decided_all:
        text += (
            f" Corrected for multiplicity over each model's family steps (Holm, {LEVEL:.0%} family-wise), "
            f"{len(kept_all)} of the {len(decided_all)} family steps called larger or smaller stay so"
            + (f"; not: {voice.listed(dropped_)}." if dropped_ else ".")
        )
    return text


def loss_blocks(findings: Sequence[Finding], check: Check) -> Blocks:
    """Each step at an equal covariate by regression (``loss_table``, folded), after one sentence on how
    often the step that holds it equal by design lies inside the regression's interval."""
    lines = loss_table(findings, check)
    if lines.empty:
        return []
    chain = _chain(check)
    cells_, agreeing = design_against_line(findings, check)
    said = ""
    if chain.by_design is not None and cells_:
        step = _name_of(check, chain.by_design[0])
        said = (
            f"By design against by regression: {step} (chain tokens matched in loss) lies inside the interval of "
            f"{chain.by_design[1]} at equal loss (the line's intercept) in {agreeing} of {cells_} model and dataset cells."
        )
    title = "Each step at equal scored-token loss: its line on the gap in the scored tokens' log mean loss"
    out: Blocks = [Markdown(said)] if said else []
    return out + [fold(title, [Table(lines)])]


def tables(page, check: Check) -> Blocks:
    """The chain per dataset and family in each norm (the first shown, the others folded), each step
    with its outcome, and the instructions a condition dropped; a sentence where no dataset holds the
    chain's conditions."""
    chain = _chain(check)
    frame = table(page.findings([check.id]), check)
    out: Blocks = []
    for index, (_, norm) in enumerate(chain.norms):
        if not (frame["norm"] == norm).any():
            continue
        heading = f"In the {norm}: each gap as a ratio, fast over slow [{LEVEL:.0%} interval], and what it decides"
        if index == 0:
            out += [Markdown(f"**{heading}.**"), Table(wide_table(frame, check, norm))]
            found = page.findings([check.id])
            said = multiplicity_text(found, frame, check)
            out += [Markdown(said)] if said else []
            out += loss_blocks(found, check)
            lacking = dropped(page.draws, check)
            if not lacking.empty:
                out.append(
                    fold("Instructions a condition lacks (too long, a zero gradient)", [Table(lacking, by=None)])
                )
        else:
            out.append(fold(heading, [Table(wide_table(frame, check, norm))]))
    return out or [Markdown(f"No dataset holds the chain's conditions ({', '.join(chain.conditions)}).")]


def blocks(page, check: Check) -> Blocks:
    """The chain's figure (the page's note under it) and how to read it, folded; nothing where no
    dataset holds its conditions (the first page's sentences are the abstract's)."""
    frame = table(page.findings([check.id]), check)
    drawn = figure(frame, check, note=page.note())
    if drawn is None:
        return []
    chain = _chain(check)
    alt = f"{chain.total_name} and its steps ({', '.join(s.name for s in chain.steps)}) per model and family"
    return [FigureBlock(drawn, alt), fold("How to read the figure", [Markdown(caption(check))])]


# --------------------------------------------------------------------------- a store's chain, for the command line


@dataclass(frozen=True)
class StoredChain:
    """A chain check's table on a store, the instructions its conditions dropped, and the samples
    its conditions skipped: model, condition, reason, samples."""

    table: pd.DataFrame
    dropped: pd.DataFrame
    skipped: pd.DataFrame


def chain_conditions(check: Check, datasets: Sequence[str] = vocabulary.REASONING_DATASETS) -> list[str]:
    """The condition keys a chain reads: its settings of correct responses per dataset."""
    return [f"{d}/{s}/{vocabulary.CORRECT}" for d in datasets for s in _chain(check).conditions]


def _models(root: Path) -> list[str]:
    if is_exported_file(root):
        return sorted(map(str, read_exported(root, None, ["model"])["model"].unique()))
    if not (root / "store.json").is_file():
        raise ReportError(f"{root}: no results store here; pass the results directory of a run")
    return sorted(map(str, ResultsStore(root, create=False).distinct("model")))


def _run_profile(root: Path) -> dict:
    """The profile of the store's last recorded run ({} where none is recorded)."""
    record = runlog.latest(root) if root.is_dir() else None
    return dict(record.profile) if record is not None else {}


def extract_commands(root: Path, missing: dict[str, list[str]], n_samples: int | None) -> str:
    """The commands that compute each model's ``missing`` conditions into the store at ``root``."""
    count = f" --n-samples {n_samples}" if n_samples else ""
    return "; ".join(
        f"`{EXTRACT} --model {model} --data {' '.join(keys)} --out {root}{count}`" for model, keys in missing.items()
    )


def missing_conditions(coverage: pd.DataFrame) -> dict[str, list[str]]:
    """Per model, the chain's conditions with no stored nor skipped sample, on the datasets where the
    model holds any of them."""
    held = coverage.assign(held=(coverage["stored"] + coverage["skipped"]) > 0)
    held["dataset"] = held["condition"].str.split("/").str[0]
    out: dict[str, list[str]] = {}
    for (model, _), group in held.groupby(["model", "dataset"], sort=False):
        if group["held"].any() and not group["held"].all():
            out.setdefault(str(model), []).extend(group.loc[~group["held"], "condition"])
    return out


def _skipped(skipped: pd.DataFrame) -> pd.DataFrame:
    """The samples skipped, counted per model, condition and reason (the reason's first words)."""
    if not len(skipped):
        return pd.DataFrame(columns=["model", "condition", "reason", "samples"])
    return (
        skipped.assign(reason=skipped["reason"].astype(str).str.split(":").str[0])
        .groupby(["model", "condition", "reason"], observed=True)["sample_index"]
        .nunique()
        .rename("samples")
        .reset_index()
    )


def load_chain(results_dir, check: Check, *, n_resamples: int | None = None) -> StoredChain:
    """A chain check on every model of a store (its last run's draw of instructions, resamples and
    seed), in every norm it declares; one ``ReportError`` naming the conditions the store lacks and
    the commands that compute them."""
    chain = _chain(check)
    root = Path(results_dir)
    models = _models(root)
    profile = _run_profile(root)
    n_samples = profile.get("extraction", {}).get("n_samples")
    results = load_results(root, models, chain_conditions(check), n_samples=n_samples, read=check.reads)
    missing = missing_conditions(results.coverage)
    if missing or results.rows.empty:
        listed = "; ".join(f"{m}: {', '.join(keys)}" for m, keys in missing.items())
        lacks = f"lacks {listed}" if missing else "holds none of them"
        commands = extract_commands(root, missing, n_samples) if missing else "`python -m analysis run --profile cpu`"
        raise ReportError(
            f"{root}: the split reads {len(chain.conditions)} conditions of correct responses per dataset "
            f"({', '.join(chain.conditions)}); the store {lacks}. Compute them with {commands}"
        )
    stats = ("nuclear_norm",)
    draws = all_curve_draws(
        results.rows,
        list(results.models),
        stats,
        n_resamples=n_resamples or profile.get("n_resamples", 1000),
        seed=profile.get("seed", 0),
        sample_stats=[s for s in check.reads if s in results.rows and s not in stats],
    )
    findings = check.run(Inputs(draws=draws))
    return StoredChain(table(findings, check), dropped(draws, check), _skipped(results.skipped))
