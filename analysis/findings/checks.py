"""The checks of the study, each declared once: the paper's findings F1-F5, L and L2 beyond it,
A1, G1, A2 and A3 on where F1's and F3's gaps come from, and T1-T3 of the training runs.

A check is data: a frozen dataclass of its scope (``analysis.findings.scopes``: ``PerModelCheck``,
``PairCheck``, ``WikiCheck``, ``TrainingRunCheck``) built with keyword arguments: its id, its claim
in plain words and as its estimand and rule, the function that computes its parts
(``analysis.findings.check_parts``), the chapters that show it, the simulated rules that measure
its error rates (``calibrated_by``, in ``analysis.findings.calibration``), the figure that shows
one of its parts beyond the verdict matrix. The findings engine (``run_checks``), the verdict
matrix, the pages' paragraphs and figures, the checks page's claims and the calibration tables all
iterate over a registry: an immutable tuple of checks, ``REGISTRY`` unless another is passed.

To add a check: write its parts function and add one check to ``REGISTRY`` (or build a new
registry, ``extended(REGISTRY, check)``). A check of a new scope is one more subclass of
``scopes.Check`` with its own ``run``; what it reads comes in ``Inputs.extra``, as for the
questions T1-T3 of the training runs (``TrainingRunCheck``, inputs ``extra[training.TRAINING_RUNS]``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from analysis.core.errors import StudyError
from analysis.findings import averaging, beyond_loss, same_tokens, training
from analysis.findings import check_parts as cp
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.pooling import scope_rank
from analysis.findings.rules import SAME_MARGIN, Finding, Role, sign_disagreements
from analysis.findings.scopes import (
    PER_MODEL,
    PER_PAIR,
    PER_TRAINING_RUN,
    STORE,
    WIKI_FILES,
    Check,
    Inputs,
    PairCheck,
    PartFigure,
    PerModelCheck,
    TrainingRunCheck,
    WikiCheck,
)

__all__ = [
    "PER_MODEL",
    "PER_PAIR",
    "PER_TRAINING_RUN",
    "WIKI_FILES",
    "STORE",
    "Check",
    "Inputs",
    "PairCheck",
    "PartFigure",
    "PerModelCheck",
    "TrainingRunCheck",
    "WikiCheck",
]

Registry = tuple[Check, ...]  # the checks, in the book's order
SUMMARY_CHAPTERS = ("intro", "summary")  # the pages that show every check
FAMILY_CHAPTERS = ("math_reasoning", "commonsense_reasoning", "pretrained_vs_instruct")
_MARGIN = f"{math.exp(SAME_MARGIN) - 1:.0%}"


def registry_of(checks: Iterable[Check]) -> Registry:
    """A registry of ``checks`` (in that order): each a check of one scope, each id once."""
    out: list[Check] = []
    for check in checks:
        if not isinstance(check, Check):
            raise StudyError(f"{check!r} is not a check of a scope (a subclass of scopes.Check)")
        if check.id in {c.id for c in out}:
            raise StudyError(f"check {check.id!r} is declared twice")
        out.append(check)
    return tuple(out)


def extended(registry: Registry, *checks: Check) -> Registry:
    """A new registry: ``registry`` and then ``checks`` (the registry itself is left as it is)."""
    return registry_of((*registry, *checks))


LENGTH_FIGURE = PartFigure(
    Role.SHARE,
    "share of the Simplified vs Detailed gap left at equal length",
    "Length: share of the Simplified vs Detailed gap left at equal length, with intervals",
    "No Simplified vs Detailed gap is established here, so no share is shown.",
)
_READING = (*SUMMARY_CHAPTERS, *FAMILY_CHAPTERS)
_LENGTH = (*_READING, "beyond_the_paper")
_TRAINING = ("during_training",)  # only a training profile's book has rows these checks read
GAP_CHAPTER = "where_the_gap_comes_from"  # the chapter that splits F1's and F3's gaps (A1, G1)
_GAP = (*SUMMARY_CHAPTERS, GAP_CHAPTER)

REGISTRY: Registry = registry_of(
    (
        PerModelCheck(
            id="F1",
            plain="Fast thinking gives larger gradients than slow thinking, more so in early layers",
            headline=Role.F1_GAP,
            claim=(
                "None CoT gives larger nuclear norms (geometric mean over instructions; the paper's mean nuclear norm "
                "shown beside) than Detailed CoT, and the gap is larger in the early layers than in the late ones"
            ),
            parts=cp.f1_parts,
            chapters=_READING,
            calibrated_by=("gap",),
        ),
        PerModelCheck(
            id="F2",
            plain="The faster the thinking, the more the gradient varies from layer to layer",
            headline=Role.MAD_RATIO,
            claim=(
                "Curves vary more from layer to layer the faster the thinking (None > Simplified > Detailed CoT), for "
                "each of Q, K, V and O (roughness of the mean log curve; None vs Simplified on the mean curve's roughness "
                "where None's log-scale spread changes across layers)"
            ),
            parts=cp.f2_parts,
            chapters=_READING,
            calibrated_by=("roughness", "paper MAD"),
            adjust=cp.spread_decides,
        ),
        PerModelCheck(
            id="F3",
            plain="Slow thinking, not fast, gives irrelevant responses larger gradients than correct ones",
            headline=Role.F3_GAP,
            claim=(
                "Under Detailed CoT irrelevant responses give curves (geometric mean of nuclear norms; the paper's mean "
                f"nuclear norm shown beside) clearly larger than correct ones (by more than {_MARGIN}); under None CoT the "
                f"two curves are nearly the same (the root-mean-square over layers of the per-layer log ratio within {_MARGIN})"
            ),
            parts=cp.f3_parts,
            chapters=_READING,
            calibrated_by=("gap", "same"),
            note=cp.identical_note,
        ),
        PairCheck(
            id="F4",
            plain="Instruction tuning does not sharpen how gradients tell irrelevant from correct responses",
            headline=Role.SIZE_RATIO,
            claim=(
                "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
                "model: the size of its separation (root-mean-square over layers of the per-layer log ratio of geometric "
                f"means of nuclear norms, irrelevant over correct, whatever its direction) exceeds the base's by less than "
                f"{_MARGIN} (the signed ratios and the paper's mean nuclear norm shown beside)"
            ),
            parts=cp.f4_parts,
            chapters=_READING,
            calibrated_by=("not better",),
        ),
        WikiCheck(
            id="F5",
            plain="Longer knowledge responses do not smooth the layer curves as slow thinking does",
            headline=Role.SHARES,
            claim=(
                "Longer Wiki responses do not smooth the curves as much as slow thinking does (Detailed vs Simplified "
                "CoT: the share of its noise-corrected roughness a curve keeps from 100 to 1000 Wiki words exceeds the "
                "share it keeps from Simplified to Detailed CoT, where both shorter curves' roughness is established), "
                f"and correct vs irrelevant Wiki curves are nearly the same (the root-mean-square over layers of the "
                f"per-layer log ratio within {_MARGIN})"
            ),
            parts=cp.f5_parts,
            chapters=(*SUMMARY_CHAPTERS, "wiki_knowledge"),
            calibrated_by=("share", "same"),
        ),
        PerModelCheck(
            id="L",
            plain="Content matters beyond length: a Detailed CoT cut to the Simplified length still gives smaller gradients",
            headline=Role.CONTENT,
            claim=(
                "Content matters beyond length: Detailed CoT cut to the Simplified-CoT length still gives smaller "
                "nuclear norms (geometric mean; the paper's mean nuclear norm shown beside) than Simplified CoT, where the "
                "Simplified vs Detailed gap is established"
            ),
            parts=cp.length_parts,
            chapters=_LENGTH,
            calibrated_by=("gap",),
            figure=LENGTH_FIGURE,
            after_pooling=cp.with_share,
            gate=cp.gap_established,
        ),
        PerModelCheck(
            id="L2",
            plain="Length matters: cutting a Detailed CoT to the Simplified length gives larger gradients",
            headline=Role.LENGTH,
            claim=(
                "Length matters: Detailed CoT cut to the Simplified-CoT length gives larger nuclear norms (geometric "
                "mean; the paper's mean nuclear norm shown beside) than the full Detailed CoT, where the Simplified vs "
                "Detailed gap is established"
            ),
            parts=cp.length_effect_parts,
            chapters=_LENGTH,
            calibrated_by=("gap",),
            after_pooling=cp.with_share,
            gate=cp.gap_established,
        ),
        TrainingRunCheck(
            id="T1",
            plain="A setting's gradient curve before training predicts where training on it changes the weights",
            claim=(
                "The step-0 nuclear-norm curve of a setting predicts where training on it changes the weights better "
                "than depth alone: its Spearman correlation across layers with the weight change after K steps exceeds "
                "the layer index's (in absolute value); that difference decides"
            ),
            parts=training.t1,
            chapters=_TRAINING,
            calibrated_by=("rank correlation",),
        ),
        TrainingRunCheck(
            id="T2",
            plain="Training on fast thinking changes the early layers more than training on slow thinking",
            claim=(
                "Training on None CoT changes the early layers more than training on Detailed CoT, and more so than the "
                "late layers; the full Detailed CoT arm and the arm cut to the None-CoT token count (token-matched) both "
                "decide"
            ),
            parts=training.t2,
            chapters=_TRAINING,
            calibrated_by=("arm change",),
        ),
        TrainingRunCheck(
            id="T3",
            plain="Fast thinking's larger gradient persists through training",
            claim=(
                "The None / Detailed gap in probe nuclear norms (F1) persists after K steps of training on each arm: "
                "its change since step 0 decides (the gap shrinks by less than 10%), where the gap is established at step 0"
            ),
            parts=training.t3,
            chapters=_TRAINING,
            calibrated_by=("probe gap",),
        ),
        # --- A1 and G1: F1 against what averaging over the response tokens predicts, F3 against the loss
        PerModelCheck(
            id="A1",
            plain="Fast thinking's larger gradient is more than averaging over fewer tokens",
            headline=Role.BEYOND_AVERAGING,
            claim=(
                "F1 beyond averaging: None CoT's gap over Detailed CoT in mean log Frobenius norm exceeds what averaging "
                "over more response tokens alone predicts (1/2 log of R_Detailed / R_None): None CoT's sqrt(R)-scaled "
                "Frobenius norm, its token size and alignment together, is larger (geometric mean over instructions)"
            ),
            parts=averaging.a1_parts,
            chapters=_GAP,
            calibrated_by=("averaging",),
            reads=averaging.READS,
            unknown=averaging.a1_unknown,
        ),
        PerModelCheck(
            id="G1",
            plain="The layer curves tell irrelevant from correct responses beyond the loss",
            headline=Role.BEYOND_LOSS,
            claim=(
                "F3 beyond the loss: under Detailed CoT the layer curves (log nuclear norms) carry information on which "
                "response of a pair is irrelevant that the token losses lack: with the pair differences of the mean, "
                "largest and spread of the token losses and of log R partialled out inside each training fold, the "
                "out-of-fold AUROC of the residual curves exceeds what sign flips of whole pairs give (one-sided "
                "p < 2.5%; a permutation test, so never 'does not hold'); 'not applicable' where the loss alone "
                "separates every pair; None CoT shown beside"
            ),
            parts=beyond_loss.g1_parts,
            chapters=_GAP,
            calibrated_by=("beyond loss",),
            reads=beyond_loss.READS,
            after_pooling=beyond_loss.after_pooling,
            note=beyond_loss.covariates_note,
            gate=beyond_loss.separated,
        ),
        # --- A2 and A3: F1 on the same scored tokens, the final answer after the same phrase
        PerModelCheck(
            id="A2",
            plain="On the answer tokens alone, reasoning before them makes their gradient smaller",
            headline=Role.SAME_TOKEN_GAP,
            claim=(
                "F1 on the same tokens: scoring only the final answer, after the same phrase, the answer's gradient "
                "without reasoning has larger nuclear norms than after the Detailed CoT (geometric mean over the "
                "instructions both hold, paired), and that ratio is larger in the early layers than in the late ones"
            ),
            parts=same_tokens.a2_parts,
            chapters=_GAP,
            calibrated_by=("gap",),
            reads=same_tokens.READS,
        ),
        PerModelCheck(
            id="A3",
            plain="A2 holds also at equal answer loss",
            headline=Role.EQUAL_LOSS_GAP,
            claim=(
                "A2 beyond the answer's loss: where the answer is as predictable after the Detailed CoT as without it, "
                "the answer's gradient is still larger without reasoning (the intercept of the paired regression of "
                "A2's log nuclear-norm gap on the gap in the answer tokens' mean log(1 - p))"
            ),
            parts=same_tokens.a3_parts,
            chapters=_GAP,
            calibrated_by=("equal loss",),
            reads=same_tokens.READS,
            note=same_tokens.extrapolation_note,
        ),
    )
)
LENGTH_CHECKS = ("L", "L2")  # the length question (beyond the paper), answered together


def all_ids(registry: Registry = REGISTRY) -> tuple[str, ...]:
    """Every check of the registry, in the book's order."""
    return tuple(c.id for c in registry)


def get(check_id: str, registry: Registry = REGISTRY) -> Check:
    """The check of that id."""
    for check in registry:
        if check.id == check_id:
            return check
    raise StudyError(f"unknown check {check_id!r}; checks: {', '.join(all_ids(registry))}")


def claim(check_id: str, registry: Registry = REGISTRY) -> str:
    return get(check_id, registry).claim


def statistics_read(check_ids: Iterable[str], registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The per-sample statistics that the checks ``check_ids`` read beyond the nuclear norm curves."""
    return tuple(dict.fromkeys(stat for c in selected(check_ids, registry) for stat in c.reads))


def on_chapter(chapter: str, scope: str | None = None, registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The checks a chapter shows (of one scope, if given), in the book's order."""
    return tuple(c.id for c in registry if chapter in c.chapters and scope in (None, c.scope))


def selected(checks: Iterable[str] | None, registry: Registry = REGISTRY) -> list[Check]:
    """The checks of the registry among ``checks`` (None: all), in the book's order."""
    wanted = None if checks is None else set(checks)
    return [c for c in registry if wanted is None or c.id in wanted]


# --------------------------------------------------------------------------- the engine


def run_checks(
    draws: dict[str, CurveDraws],
    checks: Iterable[str] | None = None,
    *,
    registry: Registry = REGISTRY,
    identical: dict[str, frozenset] | None = None,
    reference: dict[str, CurveDraws] | None = None,
    pairs: dict[str, str] | None = None,
    declared: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> list[Finding]:
    """Every check of the registry in ``checks`` (None: all) that the curves cover, each run by its
    scope (``scopes.Check.run``): per dataset and pooled per family, or per Wiki files. The other
    inputs are those of :class:`scopes.Inputs` (identical pairs, reference curves, model pairs,
    declared pairs, and ``extra``, what the checks of other scopes read, e.g. training runs; None:
    none)."""
    given = Inputs(
        draws,
        identical=identical or {},
        reference=reference or {},
        pairs=pairs or {},
        declared=declared,
        extra=extra or {},
    )
    out: list[Finding] = []
    for check in selected(checks, registry):
        out += check.run(given)
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


def findings_table(findings: Iterable[Finding], registry: Registry = REGISTRY) -> pd.DataFrame:
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
            "claim": claim(f.check, registry),
            "opposite_sign": bool(sign_disagreements(f.parts)),
        }
        for f in findings
    ]
    table = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    if table.empty:
        return table
    order = {c: i for i, c in enumerate(all_ids(registry))}
    table["_c"] = table["check"].map(order)
    table["_s"] = table["scope"].map(scope_rank)
    return table.sort_values(["_c", "model", "_s"], kind="stable").drop(columns=["_c", "_s"]).reset_index(drop=True)


def part_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per part of every finding, with its value and interval in the reader's units (and
    its ``rules.Role``'s name, empty for a part nothing looks up)."""
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
                    "group": p.group,
                    "name": p.shown_name,
                    "value": shown[0],
                    "low": shown[1],
                    "high": shown[2],
                    "bound": p.show(p.bound),
                    "side": p.side,
                    "supports": p.supports(),
                    "decides": p.decides,
                    "n": p.n,
                    "role": "" if p.role is None else p.role.name,
                }
            )
    return pd.DataFrame(rows)


CELL = ["check", "model", "scope", "pooled"]


def headline_parts(parts: pd.DataFrame, registry: Registry = REGISTRY) -> pd.DataFrame:
    """One row of ``parts`` per cell: the part whose size the matrix and the summary print, found by
    its check's ``headline`` role (None, or no part of that role in the cell: its first deciding
    part)."""
    if parts.empty:
        return parts
    roles = {c.id: c.headline.name for c in registry if c.headline is not None}
    wanted = parts["role"] == parts["check"].map(roles).fillna("\0")
    first_deciding = parts["decides"].astype(bool) & ~parts.duplicated(CELL + ["decides"])
    has_wanted = wanted.groupby([parts[c] for c in CELL]).transform("any")
    chosen = parts[(wanted | (first_deciding & ~has_wanted))]
    return chosen.drop_duplicates(CELL).reset_index(drop=True)


def anchor(check_id: str) -> str:
    """The id of a check's entry on the checks page (``claims_markdown``): one per check, the same
    in every build, so that the other pages link to its rule."""
    return f"check-{check_id.lower()}"


# The fold under a check's plain words on the checks page, set apart from the next check's.
_RULE_FOLD = '<details style="margin-bottom: 1.5em"><summary>Estimand and rule</summary>'


def claims_markdown(checks: Sequence[Check] | None = None) -> str:
    """The claims on the checks page (MyST Markdown), generated from the registry: each check's id,
    scope and plain words under its anchor, its estimand and rule (``claim``) folded under it."""
    entries = [
        f"({anchor(c.id)})=\n**{c.id}** ({c.scope}): {c.plain}.\n\n{_RULE_FOLD}\n\n{c.claim}.\n\n</details>"
        for c in (REGISTRY if checks is None else checks)
    ]
    return "\n\n".join(entries)
