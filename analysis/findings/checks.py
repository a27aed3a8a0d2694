"""The checks of the study, each declared once: the paper's findings F1-F5, L and L2 beyond it, and
T1-T3 of the training runs.

A check is data (``Check``): its id, its claim in one sentence, its scope (what one verdict is
about: one model, an instruct model with its base model, the Wiki files), the function that
computes its parts (``analysis.findings.check_parts``), the chapters that show it, the figure that
shows one of its parts beyond the verdict matrix, and the simulated rules that measure its error
rates (``analysis.findings.calibration``). The findings engine (``run_checks``), the verdict
matrix, the pages' paragraphs and figures, the methods page's table of claims and the calibration
tables all iterate over ``REGISTRY``.

To add a check: write its parts function and add one ``Check`` to ``REGISTRY``. A check of a new
scope adds one runner to ``SCOPES`` (``register_scope``); what it reads comes in ``Inputs.extra``,
as for the questions T1-T3 of the training runs (scope "per training run", runner
``training.per_training_run``, inputs ``extra[training.TRAINING_RUNS]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field

import numpy as np
import pandas as pd

from analysis import vocabulary
from analysis.errors import StudyError
from analysis.findings import averaging, beyond_loss, training
from analysis.findings import check_parts as cp
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.pooling import (
    Adjust,
    family_findings,
    is_own_base,
    not_applicable_reason,
    reasoning_datasets,
    scope_rank,
)
from analysis.findings.rules import SAME_MARGIN, Finding, Part, sign_disagreements

# What one verdict is about (a check's scope; a finding's own scope is a dataset or a family).
PER_MODEL, PER_PAIR, WIKI_FILES = "per model", "per base-instruct pair", "Wiki files"
PER_TRAINING_RUN = "per training run"  # one base model's fine-tuning runs, per arm trained on
SUMMARY_CHAPTERS = ("intro", "summary")  # the pages that show every check
FAMILY_CHAPTERS = ("math_reasoning", "commonsense_reasoning", "pretrained_vs_instruct")
_MARGIN = f"{math.exp(SAME_MARGIN) - 1:.0%}"


class CheckError(StudyError, ValueError):
    """A check declared twice, an unknown check or scope."""


@dataclass(frozen=True)
class PartFigure:
    """A forest plot of one part of a check, per model and scope, with its interval."""

    part: str
    x_label: str
    caption: str
    empty: str
    reference: float | None = 0.0


@dataclass(frozen=True)
class Check:
    """One check, declared once.

    ``parts``: per model and Wiki files, ``(curves, dataset, identical=...)`` or ``(curves,
    reference)``; per pair, ``(instruct curves, base curves, dataset)`` (``SCOPES`` says which).
    ``calibrated_by``: the simulated rules of ``calibration`` whose error rates are this check's.
    ``figure``: a part shown as a forest plot on the check's chapters (None: the matrix only).
    ``after_pooling``: what the check recomputes from a family's pooled parts (e.g. a share).
    ``adjust``: what the check changes in every finding's parts from the parts themselves, with a
    note (e.g. F2 deciding on the mean curve where None's log-scale spread changes).
    ``note``: a line under the check's numbers, from its curves, identical pairs and datasets.
    ``gate``: why the check does not apply to a finding's parts, e.g. a precondition that is not
    established (then "not applicable" with that reason; empty: it applies).
    ``reads``: the stored statistics its parts read per sample beyond the nuclear norm curves
    (a page that shows the check reads them, ``statistics_read``).
    ``unknown``: (curves, dataset, store) -> why the parts cannot be computed where the conditions are
    stored but a statistic they read is not (then "not applicable" with that reason and the command that
    adds it to ``store``, instead of no cell; "": that is not why).
    """

    id: str
    claim: str
    scope: str
    parts: Callable[..., list[Part] | None]
    chapters: tuple[str, ...]
    calibrated_by: tuple[str, ...]
    _: KW_ONLY
    figure: PartFigure | None = None
    after_pooling: Callable[[list[Part]], list[Part]] | None = None
    adjust: Adjust | None = None
    note: Callable[[CurveDraws, dict, dict], str] | None = None
    gate: Callable[[Sequence[Part]], str] | None = None  # why it does not apply to a finding ("": it does)
    reads: tuple[str, ...] = ()
    unknown: Callable[[CurveDraws, str, str | None], str] | None = None


LENGTH_FIGURE = PartFigure(
    cp.SHARE_PART,
    "share of the Simplified vs Detailed gap left at equal length",
    "Length: share of the Simplified vs Detailed gap left at equal length, with intervals",
    "No Simplified vs Detailed gap is established here, so no share is shown.",
)
_READING = (*SUMMARY_CHAPTERS, *FAMILY_CHAPTERS)
_LENGTH = (*_READING, "beyond_the_paper")
_TRAINING = ("during_training",)  # only a training profile's book has rows these checks read
GAP_CHAPTER = "where_the_gap_comes_from"  # the chapter that splits F1's and F3's gaps (A1, G1)
_GAP = (*SUMMARY_CHAPTERS, GAP_CHAPTER)

REGISTRY: list[Check] = [
    Check(
        "F1",
        "None CoT gives larger nuclear norms (geometric mean over instructions; the paper's mean nuclear norm "
        "shown beside) than Detailed CoT, and the gap is larger in the early layers than in the late ones",
        PER_MODEL,
        cp.f1_parts,
        _READING,
        ("gap",),
    ),
    Check(
        "F2",
        "Curves vary more from layer to layer the faster the thinking (None > Simplified > Detailed CoT), for "
        "each of Q, K, V and O (roughness of the mean log curve; None vs Simplified on the mean curve's roughness "
        "where None's log-scale spread changes across layers)",
        PER_MODEL,
        cp.f2_parts,
        _READING,
        ("roughness", "paper MAD"),
        adjust=cp.spread_decides,
    ),
    Check(
        "F3",
        "Under Detailed CoT irrelevant responses give curves (geometric mean of nuclear norms; the paper's mean "
        f"nuclear norm shown beside) clearly larger than correct ones (by more than {_MARGIN}); under None CoT the "
        f"two curves are nearly the same (the root-mean-square over layers of the per-layer log ratio within {_MARGIN})",
        PER_MODEL,
        cp.f3_parts,
        _READING,
        ("gap", "same"),
        note=cp.identical_note,
    ),
    Check(
        "F4",
        "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
        "model: the size of its separation (root-mean-square over layers of the per-layer log ratio of geometric "
        f"means of nuclear norms, irrelevant over correct, whatever its direction) exceeds the base's by less than "
        f"{_MARGIN} (the signed ratios and the paper's mean nuclear norm shown beside)",
        PER_PAIR,
        cp.f4_parts,
        _READING,
        ("not better",),
    ),
    Check(
        "F5",
        "Longer Wiki responses do not smooth the curves as much as slow thinking does (Detailed vs Simplified "
        "CoT: the share of its noise-corrected roughness a curve keeps from 100 to 1000 Wiki words exceeds the "
        "share it keeps from Simplified to Detailed CoT, where both shorter curves' roughness is established), "
        f"and correct vs irrelevant Wiki curves are nearly the same (the root-mean-square over layers of the "
        f"per-layer log ratio within {_MARGIN})",
        WIKI_FILES,
        cp.f5_parts,
        (*SUMMARY_CHAPTERS, "wiki_knowledge"),
        ("roughness", "same"),
    ),
    Check(
        "L",
        "Content matters beyond length: Detailed CoT cut to the Simplified-CoT length still gives smaller "
        "nuclear norms (geometric mean; the paper's mean nuclear norm shown beside) than Simplified CoT, where the "
        "Simplified vs Detailed gap is established",
        PER_MODEL,
        cp.length_parts,
        _LENGTH,
        ("gap",),
        figure=LENGTH_FIGURE,
        after_pooling=cp.with_share,
        gate=cp.gap_established,
    ),
    Check(
        "L2",
        "Length matters: Detailed CoT cut to the Simplified-CoT length gives larger nuclear norms (geometric "
        "mean; the paper's mean nuclear norm shown beside) than the full Detailed CoT, where the Simplified vs "
        "Detailed gap is established",
        PER_MODEL,
        cp.length_effect_parts,
        _LENGTH,
        ("gap",),
        after_pooling=cp.with_share,
        gate=cp.gap_established,
    ),
    Check(
        "T1",
        "The step-0 nuclear-norm curve of a setting predicts where training on it changes the weights better "
        "than depth alone: its Spearman correlation across layers with the weight change after K steps exceeds "
        "the layer index's (in absolute value); that difference decides",
        PER_TRAINING_RUN,
        training.t1,
        _TRAINING,
        ("rank correlation",),
    ),
    Check(
        "T2",
        "Training on None CoT changes the early layers more than training on Detailed CoT, and more so than the "
        "late layers; the full Detailed CoT arm and the arm cut to the None-CoT token count (token-matched) both "
        "decide",
        PER_TRAINING_RUN,
        training.t2,
        _TRAINING,
        ("arm change",),
    ),
    Check(
        "T3",
        "The None / Detailed gap in probe nuclear norms (F1) persists after K steps of training on each arm: "
        "its change since step 0 decides (the gap shrinks by less than 10%), where the gap is established at step 0",
        PER_TRAINING_RUN,
        training.t3,
        _TRAINING,
        ("probe gap",),
    ),
    # --- A1 and G1: F1 against what averaging over the response tokens predicts, F3 against the loss
    Check(
        "A1",
        "F1 beyond averaging: None CoT's gap over Detailed CoT in mean log Frobenius norm exceeds what averaging "
        "over more response tokens alone predicts (1/2 log of R_Detailed / R_None): None CoT's sqrt(R)-scaled "
        "Frobenius norm, its token size and alignment together, is larger (geometric mean over instructions)",
        PER_MODEL,
        averaging.a1_parts,
        _GAP,
        ("averaging",),
        reads=averaging.READS,
        unknown=averaging.a1_unknown,
    ),
    Check(
        "G1",
        "F3 beyond the loss: under Detailed CoT one sample's layer curves (log nuclear norms) tell irrelevant from "
        "correct responses better than its loss alone and than its loss with its response length (out-of-fold "
        "AUROC, folds grouped by instruction; None CoT shown beside)",
        PER_MODEL,
        beyond_loss.g1_parts,
        _GAP,
        ("beyond loss",),
        reads=beyond_loss.READS,
    ),
]
PAPER_CHECKS = ("F1", "F2", "F3", "F4", "F5")
LENGTH_CHECKS = ("L", "L2")  # the length question (beyond the paper), answered together


def all_ids() -> tuple[str, ...]:
    """Every registered check, in the book's order."""
    return tuple(c.id for c in REGISTRY)


def get(check_id: str) -> Check:
    """The registered check of that id."""
    for check in REGISTRY:
        if check.id == check_id:
            return check
    raise CheckError(f"unknown check {check_id!r}; checks: {', '.join(all_ids())}")


def register_scope(scope: str, runner: Callable[[Check, Inputs], list[Finding]]) -> None:
    """Add a scope: its runner turns one check and the inputs into findings (see ``_per_model``)."""
    if scope in SCOPES:
        raise CheckError(f"scope {scope!r} is declared twice")
    SCOPES[scope] = runner


def register(check: Check) -> Check:
    """Add a check at the end of the registry (its scope must have a runner in ``SCOPES``)."""
    if check.id in all_ids():
        raise CheckError(f"check {check.id!r} is declared twice")
    if check.scope not in SCOPES:
        raise CheckError(f"check {check.id!r}: unknown scope {check.scope!r}; scopes: {', '.join(SCOPES)}")
    REGISTRY.append(check)
    return check


def claim(check_id: str) -> str:
    return get(check_id).claim


def statistics_read(check_ids: Iterable[str]) -> tuple[str, ...]:
    """The per-sample statistics that the checks ``check_ids`` read beyond the nuclear norm curves."""
    return tuple(dict.fromkeys(stat for c in selected(check_ids) for stat in c.reads))


def on_chapter(chapter: str, scope: str | None = None) -> tuple[str, ...]:
    """The checks a chapter shows (of one scope, if given), in the book's order."""
    return tuple(c.id for c in REGISTRY if chapter in c.chapters and scope in (None, c.scope))


def selected(checks: Iterable[str] | None) -> list[Check]:
    """The registered checks among ``checks`` (None: all), in the book's order."""
    wanted = None if checks is None else set(checks)
    return [c for c in REGISTRY if wanted is None or c.id in wanted]


# --------------------------------------------------------------------------- the engine


@dataclass
class Inputs:
    """What the checks read: every model's curves, the None-CoT instructions whose irrelevant answer
    equals the correct one (per dataset), reasoning curves for Wiki-only data (per model), the
    instruct -> base pairs and the pairs the user declares."""

    draws: dict[str, CurveDraws]
    identical: dict[str, frozenset] = field(default_factory=dict)
    reference: dict[str, CurveDraws] = field(default_factory=dict)
    pairs: dict[str, str] = field(default_factory=dict)
    declared: dict[str, str] | None = None
    extra: dict[str, object] = field(default_factory=dict)  # what the runners of other scopes read, by name


STORE = "results store"  # Inputs.extra: the store the curves were read from (named in commands)


def _per_model(check: Check, inputs: Inputs) -> list[Finding]:
    """Per reasoning dataset of every model, then pooled per family; a dataset whose parts need a
    statistic that is not stored (``Check.unknown``) is a "not applicable" cell saying so."""
    out = []
    for model, cd in inputs.draws.items():
        by_dataset, unknown = {}, {}
        for dataset in reasoning_datasets(cd):
            parts = check.parts(cd, dataset, identical=inputs.identical.get(dataset, ()))
            if parts is not None:
                by_dataset[dataset] = parts
            elif check.unknown is not None:
                reason = check.unknown(cd, dataset, inputs.extra.get(STORE))
                unknown.update({dataset: reason} if reason else {})
        note = check.note(cd, inputs.identical, by_dataset) if check.note else ""
        out += family_findings(
            check.id, model, by_dataset, note, after_pooling=check.after_pooling, adjust=check.adjust, gate=check.gate
        )
        out += _unknown_findings(check.id, model, unknown, by_dataset)
    return out


def _unknown_findings(check: str, model: str, unknown: dict[str, str], computed: dict) -> list[Finding]:
    """The "not applicable" cells of the datasets whose parts lack a stored statistic (``reason``), and
    of each family with two of them or more and no computed dataset."""
    out = [Finding(check, model, d, False, (), not_applicable=reason) for d, reason in unknown.items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = [d for d in unknown if vocabulary.family_of(d) == family]
        if len(members) >= 2 and not any(vocabulary.family_of(d) == family for d in computed):
            out.append(Finding(check, model, family, True, (), not_applicable=unknown[members[0]]))
    return out


def _per_pair(check: Check, inputs: Inputs) -> list[Finding]:
    """Per dataset and family of every (instruct -> base) pair present; a pair that is not an
    instruct model with its own base (``is_own_base``) gets "not applicable" in every scope."""
    out = []
    for instruct, base in inputs.pairs.items():
        if instruct not in inputs.draws or base not in inputs.draws:
            continue
        by_dataset = {}
        for dataset in reasoning_datasets(inputs.draws[instruct]):
            parts = check.parts(inputs.draws[instruct], inputs.draws[base], dataset)
            if parts is not None:
                by_dataset[dataset] = parts
        found = family_findings(check.id, instruct, by_dataset, note=f"base: {base}", adjust=check.adjust)
        if not is_own_base(instruct, base, inputs.declared):
            reason = not_applicable_reason(instruct, base)
            found = [
                Finding(f.check, f.model, f.scope, f.pooled, f.parts, f.note, not_applicable=reason) for f in found
            ]
        out += found
    return out


def _wiki_files(check: Check, inputs: Inputs) -> list[Finding]:
    """One finding per model on the Wiki files (reasoning curves from ``reference`` when the
    model's own curves hold Wiki data only)."""
    out = []
    for model, cd in inputs.draws.items():
        parts = check.parts(cd, inputs.reference.get(model))
        if parts is not None:
            out.append(Finding(check.id, model, vocabulary.WIKI_DATASET, True, tuple(parts)))
    return out


SCOPES: dict[str, Callable[[Check, Inputs], list[Finding]]] = {
    PER_MODEL: _per_model,
    PER_PAIR: _per_pair,
    WIKI_FILES: _wiki_files,
    PER_TRAINING_RUN: training.per_training_run,
}


def run_checks(
    draws: dict[str, CurveDraws],
    checks: Iterable[str] | None = None,
    *,
    identical: dict[str, frozenset] | None = None,
    reference: dict[str, CurveDraws] | None = None,
    pairs: dict[str, str] | None = None,
    declared: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> list[Finding]:
    """Every registered check in ``checks`` (None: all) that the curves cover, each by its scope's
    runner (``SCOPES``): per dataset and pooled per family, or per Wiki files (``extra``: what the
    runners of other scopes read, e.g. training runs)."""
    inputs = Inputs(draws, identical or {}, reference or {}, pairs or {}, declared, extra or {})
    out: list[Finding] = []
    for check in selected(checks):
        out += SCOPES[check.scope](check, inputs)
    return out


# --------------------------------------------------------------------------- the tables


FINDING_COLUMNS = [
    "check",
    "model",
    "scope",
    "pooled",
    "verdict",
    "n",
    "n_smallest",
    "n_for_power",
    "numbers",
    "claim",
    "opposite_sign",
]


def findings_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per finding: check, model, scope, pooled, verdict, n (instructions behind the
    smallest part), n_smallest (those of its smallest dataset), n_for_power (for a finding not
    resolved, the instructions per dataset that would resolve it with 80% power at the measured
    values, ``Finding.instructions_needed``), numbers (each part with its interval), the claim, and
    opposite_sign (the paper's mean nuclear norm and the geometric mean differ in sign in some part)."""
    rows = [
        {
            "check": f.check,
            "model": f.model,
            "scope": f.scope,
            "pooled": f.pooled,
            "verdict": f.verdict,
            "n": f.n,
            "n_smallest": f.n_smallest,
            "n_for_power": f.instructions_needed(),
            "numbers": f.numbers(),
            "claim": claim(f.check),
            "opposite_sign": bool(sign_disagreements(f.parts)),
        }
        for f in findings
    ]
    table = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    if table.empty:
        return table
    order = {c: i for i, c in enumerate(all_ids())}
    table["_c"] = table["check"].map(order)
    table["_s"] = table["scope"].map(scope_rank)
    return table.sort_values(["_c", "model", "_s"], kind="stable").drop(columns=["_c", "_s"]).reset_index(drop=True)


def part_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per part of every finding, with its value and interval in the reader's units."""
    rows = []
    for f in findings:
        for p in f.parts:
            low, high = p.interval()
            value = math.nan if p.estimate is None else p.estimate.value
            shown = [p.show(v) if np.isfinite(v) else math.nan for v in (value, low, high)]
            rows.append(
                {
                    "check": f.check,
                    "model": f.model,
                    "scope": f.scope,
                    "pooled": f.pooled,
                    "part": p.label,
                    "value": shown[0],
                    "low": shown[1],
                    "high": shown[2],
                    "bound": p.show(p.bound),
                    "side": p.side,
                    "supports": p.supports(),
                    "decides": p.decides,
                    "n": p.n,
                }
            )
    return pd.DataFrame(rows)


def methods_table(checks: Sequence[Check] | None = None) -> str:
    """The table of claims on the methods page (Markdown), generated from the registry."""
    rows = ["| Check | Claim | Scope |", "| --- | --- | --- |"]
    rows += [f"| {c.id} | {c.claim}. | {c.scope} |" for c in (REGISTRY if checks is None else checks)]
    return "\n".join(rows)
