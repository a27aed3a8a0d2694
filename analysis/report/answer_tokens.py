"""The answer's own gradient and the loss convention, as the chapter "Where the gap comes from"
shows them.

- ``same_token_section``: per layer, F1's full-response gap (None against Detailed CoT, every
  response token scored) beside the same-token gap (``findings.same_tokens``: the final answer
  scored alone, after the phrase alone or after the Detailed CoT), per model and dataset; then the
  verdicts of S's reasoning step and A3 in words and their numbers per dataset, the answer's loss under both conditions
  beside.
- ``loss_convention_section``: F1's gap under the paper's per-sequence mean loss and under a
  per-token sum (as in DAPO or Dr. GRPO-style training, or any batch-token mean over responses of
  mixed lengths), which weights a sample by its response token count R: the gap in log nuclear
  norm plus log R.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.checks import ANSWER_TOKENS, CONTROLS, a3_equal_loss, a5_context
from analysis.core import vocabulary
from analysis.core.formatting import per_model
from analysis.findings import averaging, roles, same_tokens
from analysis.findings.bootstrap import CurveDraws, Estimate, pooled, rows_of
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.pooling import reasoning_datasets
from analysis.findings.roles import Role
from analysis.findings.rules import Finding, Part, Unit
from analysis.report import blocks, cells, plots, voice
from analysis.report.blocks import Blocks, Markdown, Table
from analysis.report.load import imported_models
from analysis.report.page import Page

(S, A3), (A5,) = ANSWER_TOKENS, CONTROLS
FULL, SAME = "every response token (F1)", "the answer's tokens, after the same phrase (the reasoning step)"
NOT_STORED = (
    "The store holds no answer-scored pair (`{none}` and `{detailed}` of one dataset with None CoT, both "
    "computed; an answer cut off by the profile's `max_length` is skipped and counted above): the answer's own "
    "gradient is not compared here. `python -m analysis run --profile cpu` computes them for "
    "the offline models, `python -m analysis extract --data gsm8k/none_answer/correct` (and the other "
    "datasets and settings) for any model; the original study's released statistics hold none."
)
NOT_RELEASED = (
    "The original study's released statistics hold no answer-scored lines (the final answer's tokens scored "
    "alone, after the phrase alone and after the Detailed CoT), so S and A3 have no verdict here: an "
    "extraction of the paper's models computes them (`python -m analysis run --profile paper`, on a GPU)."
)


def _layer_gap(cd: CurveDraws, dataset: str, fast: str, slow: str) -> np.ndarray | None:
    """Per layer, the mean over q, k, v, o of the gap of mean log nuclear norm, ``fast`` less ``slow``,
    on the instructions both hold."""
    ids = same_tokens.shared_instructions(cd, dataset, (fast, slow), (same_tokens.NUCLEAR,))
    if ids is None or ids.size == 0:
        return None
    curves = []
    for setting in (fast, slow):
        condition = cd.condition_key(dataset, setting)
        per_proj = []
        for proj in vocabulary.PROJECTIONS:
            matrix, own = cd.samples[(condition, proj, same_tokens.NUCLEAR)]
            rows = rows_of(matrix, own, ids)
            with np.errstate(divide="ignore"):
                per_proj.append(np.log(rows).mean(axis=0))
        curves.append(np.mean(per_proj, axis=0))
    gap = curves[0] - curves[1]
    return gap if np.all(np.isfinite(gap)) else None


def layer_gaps(page: Page, *, every_token_alone: bool = False) -> pd.DataFrame:
    """Per model, dataset and layer: F1's full-response gap and the same-token gap, for the datasets
    where the same-token gap is stored (``every_token_alone``: also F1's gap alone where it is not)."""
    rows = []
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            pairs = {FULL: ("none", "detailed"), SAME: (same_tokens.NONE, same_tokens.DETAILED)}
            gaps = {name: _layer_gap(cd, dataset, *pair) for name, pair in pairs.items()}
            if gaps[SAME] is None and not every_token_alone:
                continue
            for name, gap in gaps.items():
                if gap is not None:
                    rows += [
                        {"model": model, "dataset": dataset, "gap": name, "layer": layer, "value": float(v)}
                        for layer, v in enumerate(gap)
                    ]
    return pd.DataFrame(rows, columns=["model", "dataset", "gap", "layer", "value"])


def layer_gap_figure(table: pd.DataFrame, note: str | None = None) -> Figure | None:
    """One panel per model: per layer and dataset, the full-response gap (dashed) and the same-token
    gap (solid) of mean log nuclear norm, None less Detailed CoT; 0 is no gap."""
    if table.empty:
        return None
    models = list(dict.fromkeys(table["model"]))
    rows, columns = plots.panel_rows(len(models))
    fig, axes = plt.subplots(rows, columns, figsize=plots.panels_size(rows, columns, height=2.9), squeeze=False)
    datasets = list(dict.fromkeys(table["dataset"]))
    colours = plt.get_cmap("tab10")
    for ax, model in zip(axes.flat, models):
        mine = table[table["model"] == model]
        for dataset in dict.fromkeys(mine["dataset"]):
            named = False  # each dataset named once in the legend, by its first line
            for gap, style in ((SAME, "-"), (FULL, "--")):
                line = mine[(mine["dataset"] == dataset) & (mine["gap"] == gap)]
                if not line.empty:
                    colour, label = colours(datasets.index(dataset)), None if named else dataset
                    ax.plot(line["layer"], line["value"], style, color=colour, label=label, linewidth=1.4)
                    named = True
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("layer", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("log(None / Detailed), nuclear norm", fontsize=9)
    first = axes.flat[0]  # the line styles, named once in the legend beside the datasets' colours
    if SAME in set(table["gap"]):
        first.plot([], [], "-", color="black", linewidth=1.4, label="answer tokens alone")
    first.plot([], [], "--", color="black", linewidth=1.4, label="every response token")
    plots.drop_unused(axes, len(models))
    return plots.legend_below(fig, note=note)


def _same_tokens_in_words(found: Sequence[Finding]) -> str:
    """S's reasoning step and A3's pooled (else per dataset) findings of one model in words."""
    pieces = _sized_verdicts(found, ((S, roles.SAME_TOKEN_GAP), (A3, roles.EQUAL_LOSS_GAP)))
    return (
        "The answer's gradient without reasoning over that after the Detailed CoT (geometric mean of nuclear "
        "norms; at equal answer loss for A3): " + "; ".join(pieces) + "."
    )


def _sized_verdicts(found: Sequence[Finding], shown: Sequence[tuple[str, Role]]) -> list[str]:
    """Per check and its pooled (else per dataset) cells: "scope: size (check **verdict**)", the size
    the part of the role named (or why the check was not computed)."""
    pieces = []
    for check, role in shown:
        for f in cells.answers(cells.of_check(found, check)):
            scope = vocabulary.scope_label(f.scope)
            if f.not_applicable is not None:
                pieces.append(f"{check} not computed on {scope}: {voice.explained(f.not_applicable)}")
                continue
            part = f.part(role)
            size = voice.sized(part) if part is not None and part.estimate is not None else "not computed"
            pieces.append(f"{scope}: {size} ({check} **{f.verdict}**)")
    return pieces


def controls_section(page: Page) -> Blocks:
    """A5 (the answer after its own chain against after a context without the reasoning) in words, per
    model, and how many Detailed CoTs state the appended answer word for word (the reasoning step's
    subset beside it)."""
    found = page.findings([A5])
    out: Blocks = []
    for model in dict.fromkeys(f.model for f in found):
        a5 = _sized_verdicts([f for f in found if f.model == model], ((A5, a5_context.ORDER),))
        text = "The answer after its own chain over after the same words shuffled: " + "; ".join(a5) + "."
        out.append(Markdown(f"**{model}.** {text}"))
    if not out:
        out.append(Markdown(f"{A5} not computed: this run stores no shuffled chain."))
    counts = verbatim_table(page)
    if not counts.empty:
        out.append(Table(counts, by=None))
    return out


def verbatim_table(page: Page) -> pd.DataFrame:
    """Per dataset with answer-scored rows: how many of the run's instructions have a Detailed CoT that
    states the appended answer word for word (``data.verbatim_answer_ids``), of those it holds."""
    rows = []
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            key = (cd.condition_key(dataset, same_tokens.DETAILED), "q", "nuclear_norm")
            if key not in cd.samples:
                continue
            held = set(cd.samples[key][1].tolist())
            stated = held & set(page.verbatim.get(dataset, frozenset()))
            rows.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "instructions": len(held),
                    "whose Detailed CoT states the answer": len(stated),
                }
            )
    return pd.DataFrame(rows)


# The columns of the same-token table: what each shows, by the part's role and facet
SAME_TOKEN_COLUMNS = (
    ("None / Detailed, answer tokens", roles.SAME_TOKEN_GAP, None),
    ("the same where the chain states the answer", roles.SAME_TOKEN_GAP, (same_tokens.VERBATIM,)),
    ("at equal answer loss", roles.EQUAL_LOSS_GAP, None),
    ("answer loss, no reasoning", roles.ANSWER_LOSS, (same_tokens.NONE,)),
    ("answer loss, after Detailed CoT", roles.ANSWER_LOSS, (same_tokens.DETAILED,)),
)


def same_token_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """Per model and scope: S's reasoning step, A3's ratio at equal answer loss and the answer's mean loss
    after the phrase alone and after the Detailed CoT, each with its interval."""
    rows: dict[tuple[str, str], dict] = {}
    for f in findings:
        if f.check not in (S, A3):
            continue
        row = rows.setdefault((f.model, f.scope), {"model": f.model, "scope": vocabulary.scope_label(f.scope)})
        for column, role, facet in SAME_TOKEN_COLUMNS:
            part = f.part(role, facet=facet)
            if part is not None and part.estimate is not None:
                row[column] = voice.sized(part)
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(list(rows.values()))
    return table[[c for c in ("model", "scope", *(c for c, _, _ in SAME_TOKEN_COLUMNS)) if c in table.columns]]


def same_token_section(page: Page) -> Blocks:
    """S's reasoning step and A3's findings in words (what was found first), the per-layer figure of both gaps,
    A3's note on extrapolation where it applies, and their table."""
    table = layer_gaps(page)
    if table.empty:
        imported = set(imported_models(page.results.rows))
        released = bool(imported) and imported >= set(page.draws)
        text = NOT_RELEASED if released else NOT_STORED.format(none=same_tokens.NONE, detailed=same_tokens.DETAILED)
        return [Markdown(text)]
    found = page.findings([S, A3])
    models = list(dict.fromkeys(f.model for f in found))
    words = "\n\n".join(f"**{m}.** {_same_tokens_in_words([f for f in found if f.model == m])}" for m in models)
    out: Blocks = [
        Markdown(words or f"{S} and {A3} not computed."),
        blocks.Figure(
            layer_gap_figure(table, page.note()),
            "Per layer, F1's gap with every response token scored and with the answer's tokens scored alone, per dataset",
        ),
    ]
    for model, cd in page.draws.items():
        note = a3_equal_loss.extrapolation_note([DatasetContext(curves=cd, dataset=d) for d in reasoning_datasets(cd)])
        if note is not None:
            out.append(Markdown(f"{A3}, {model}: {note.text}."))
    table = Table(same_token_table(found), empty="No answer-scored pair is computed here.")
    return out + [blocks.fold("The numbers per dataset", [table])]


# --------------------------------------------------------------------------- the loss convention


def sum_gap(cd: CurveDraws, dataset: str) -> tuple[Estimate, Estimate] | None:
    """F1's gap in mean log nuclear norm (None less Detailed CoT, correct responses) under the
    per-sequence mean loss and under a per-token sum (each sample's log nuclear norm plus log R),
    paired; None where the store lacks the token counts."""
    none, detailed = (averaging.log_terms(cd, cd.condition_key(dataset, s)) for s in ("none", "detailed"))
    if none is None or detailed is None or averaging.LOG_NUCLEAR not in none.terms:
        return None
    terms = (none, detailed)
    weights = [cd.resampling.weights(dataset, t.ids) for t in terms]

    def gap(per_sample) -> Estimate:
        a, b = (per_sample(t).mean(axis=1) for t in terms)
        return averaging.paired_contrast(a, weights[0], b, weights_b=weights[1], dataset=dataset)

    mean = gap(lambda t: t.terms[averaging.LOG_NUCLEAR])
    total = gap(lambda t: t.terms[averaging.LOG_NUCLEAR] - 2 * t.terms[averaging.AVERAGING])  # + log R
    return mean, total


def loss_convention_table(page: Page) -> pd.DataFrame:
    """Per model and scope (each dataset, and each family pooled over its datasets): None over
    Detailed CoT's geometric mean nuclear norm under each loss convention, with intervals."""
    rows = []
    for model, cd in page.draws.items():
        by_family: dict[str, list[tuple[Estimate, Estimate]]] = {}
        for dataset in reasoning_datasets(cd):
            gaps = sum_gap(cd, dataset)
            if gaps is not None:
                by_family.setdefault(vocabulary.family_of(dataset), []).append(gaps)
                rows.append(_convention_row(model, dataset, *gaps))
        for family, members in by_family.items():
            means, totals = pooled([g[0] for g in members]), pooled([g[1] for g in members])
            if len(members) >= 2 and means is not None and totals is not None:
                rows.append(_convention_row(model, family, means, totals))
    return pd.DataFrame(rows)


def token_sum_ratios(page: Page) -> list[float]:
    """F1's gap (None over Detailed CoT) under a per-token sum loss, one ratio per family pooled (per
    dataset where no family has two)."""
    table = loss_convention_table(page)
    if table.empty:
        return []
    family = table[table["scope"].isin(vocabulary.FAMILY_LABELS.values())]
    return [float(np.exp(v)) for v in (family if not family.empty else table)["_sum"]]


def _convention_row(model: str, scope: str, mean: Estimate, total: Estimate) -> dict:
    def shown(estimate: Estimate) -> str:
        return voice.sized(Part("", estimate, "above", 0.0, Unit.RATIO, role=roles.F1_GAP))

    return {
        "model": model,
        "scope": vocabulary.scope_label(scope),
        "None / Detailed, mean loss (the paper's)": shown(mean),
        "None / Detailed, token-sum loss": shown(total),
        "_mean": mean.value,
        "_sum": total.value,
    }


def loss_convention_section(page: Page) -> Blocks:
    """The table of F1's gap under both conventions and one sentence per model saying which way F1
    points under each."""
    table = loss_convention_table(page)
    if table.empty:
        return [
            Markdown("The store holds no token counts R of None and Detailed CoT: the token-sum gap is not computed.")
        ]

    def say(model: str, group: pd.DataFrame) -> str:
        family = group[group["scope"].isin(vocabulary.FAMILY_LABELS.values())]
        shown = family if not family.empty else group
        mean_larger = int((shown["_mean"] > 0).sum())
        sum_larger = int((shown["_sum"] > 0).sum())
        return (
            f"Under the paper's mean loss None CoT's gradient is the larger in {mean_larger} of {len(shown)} "
            f"{'families' if not family.empty else 'datasets'}; under a token-sum loss in {sum_larger} of {len(shown)}."
        )

    return [
        Markdown(per_model(table, say)),
        blocks.fold("The numbers per dataset and family", [Table(table.drop(columns=["_mean", "_sum"]))]),
    ]
