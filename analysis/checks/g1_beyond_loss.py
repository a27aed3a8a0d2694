"""G1: The layer curves tell irrelevant from correct responses beyond the loss."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.checks.check_chapters import GAP_CHAPTERS
from analysis.core import vocabulary
from analysis.findings import beyond_loss, roles
from analysis.findings.battery import Fixture, model_inputs
from analysis.findings.beyond_loss import COVARIATES, DECIDING, LOSS, READS, covariates_of, setting_parts
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED, CheckId, Finding, Note, NoteKind, Part
from analysis.findings.scopes import Inputs, PerModelCheck, Section, Sized, Words
from analysis.findings.simulated_samples import Condition, SampleDesign


def g1_parts(context: DatasetContext) -> list[Part] | None:
    """G1 under Detailed CoT (deciding); the same under None CoT shown beside (identical pairs left out)."""
    cd, dataset, identical = context.curves, context.dataset, context.identical
    detailed = setting_parts(cd, dataset, DECIDING, decides=True)
    if detailed is None:
        return None
    none = setting_parts(cd, dataset, "none", decides=False, excluded=identical)
    return detailed + (none or [])


def covariates_note(contexts: Sequence[DatasetContext]) -> Note | None:
    """The covariates G1 partials out for this model (the mean loss only where the store lacks the
    rest); ``items``: their names."""
    used = {
        covariates_of(c.curves, [c.curves.condition_key(c.dataset, DECIDING, r) for r in vocabulary.RESPONSES])
        for c in contexts
    }
    if not used:
        return None
    if used == {READS}:
        names = tuple(COVARIATES[c] for c in READS)
        return Note(NoteKind.COVARIATES, "covariates: " + ", ".join(names), names)
    return Note(
        NoteKind.COVARIATES,
        "covariates: the mean token loss only, the store holding no largest token loss, spread or R",
        (COVARIATES[LOSS],),
    )


def _value(finding: Finding, role, sized: Sized, *, facet: tuple[str, ...]) -> str:
    part = finding.part(role, facet=facet)
    return "not computed" if part is None or part.estimate is None else sized(part)


def g1_lead(found: Sequence[Finding]) -> str:
    """What opens a model's paragraph: the setting that decides, and the covariates partialled out."""
    covariates = next((n.text for f in found if (n := f.note(NoteKind.COVARIATES)) is not None), "")
    said = f" ({covariates})" if covariates else ""
    return f"Under {vocabulary.setting_label(DECIDING)}{said}"


def g1_cell(finding: Finding, sized: Sized) -> str:
    """One cell in words: the AUROC beyond the loss (on the matched pairs where those decide), its
    p-value, the AUROCs of the curves and of the loss alone, the pairs within the caliper, the verdict."""
    scope = vocabulary.scope_label(finding.scope)
    deciding = (DECIDING,)
    matched = finding.note(NoteKind.LOSS_MATCHED) is not None
    decided = (DECIDING, beyond_loss.MATCHED) if matched else deciding
    where = f" on the pairs matched on the loss ({beyond_loss.matched_counts(finding.parts)})" if matched else ""
    said = CHECK.words.of(finding.verdict) if CHECK.words is not None else ""
    return (
        f"{scope}: AUROC of the curves with the loss partialled out{where} "
        f"{_value(finding, roles.BEYOND_LOSS, sized, facet=decided)} "
        f"(p = {_value(finding, roles.P_VALUE, sized, facet=decided)} by sign flips of whole pairs; on all pairs "
        f"the curves alone {_value(finding, roles.AUROC_CURVES, sized, facet=deciding)}, the loss alone "
        f"{_value(finding, roles.AUROC_LOSS, sized, facet=deciding)}, "
        f"{_value(finding, roles.MATCHED_SHARE, sized, facet=deciding)} of them within the caliper): "
        f"{finding.check} **{finding.verdict}**" + (f" (the curves {said})" if said else "")
    )


def _row_facet(facet: tuple[str, ...]) -> tuple[str, ...]:
    """A part's row: the share of the loss screen's pairs that matched sits with the matched pairs."""
    return (facet[0], beyond_loss.MATCHED) if beyond_loss.SCREENED in facet else facet


def auroc_table(findings: Sequence[Finding], sized: Sized) -> pd.DataFrame:
    """Per model, scope and setting: the AUROC of the curves beyond the loss (the statistic), its
    sign-flip p-value, the AUROCs of the curves alone and of the loss alone, and the share of pairs
    the loss orders."""
    rows = []
    for f in findings:
        for facet in dict.fromkeys(_row_facet(p.facet) for p in f.parts):
            row = {"model": f.model, "scope": vocabulary.scope_label(f.scope)}
            row["setting"] = vocabulary.setting_label(facet[0]) if facet else ""
            row["setting"] += ", matched pairs" if beyond_loss.MATCHED in facet else ""
            row |= {
                (beyond_loss.STATISTIC if p.name == beyond_loss.MATCHED_STATISTIC else p.name): sized(p)
                if p.estimate is not None
                else ""
                for p in f.parts
                if _row_facet(p.facet) == facet
            }
            rows.append(row)
    return pd.DataFrame(rows)


def covariates_line(findings: Sequence[Finding]) -> str:
    """The line under the table that names the covariates partialled out, per model where they
    differ (as a column they would make the table wider than the page)."""
    said: dict[str, list[str]] = {}
    for f in findings:
        note = f.note(NoteKind.COVARIATES)
        if note is not None:
            models = said.setdefault(", ".join(note.items), [])
            if f.model not in models:
                models.append(f.model)
    if not said:
        return ""
    if len(said) == 1:
        return f"*Partialled out: {next(iter(said))}.*"
    return "*Partialled out: " + "; ".join(f"{c} ({', '.join(m)})" for c, m in said.items()) + ".*"


CHECK = PerModelCheck(
    id=CheckId("G1"),
    lead=3,
    says=((roles.BEYOND_LOSS, "beyond the loss"),),
    words=Words(
        holds="carry information on which response is irrelevant that the token losses lack",
        fails="carry nothing beyond the token losses",
        unresolved="are not shown to carry more than the token losses (a permutation test cannot show "
        "that they carry nothing more)",
    ),
    plain="The layer curves tell irrelevant from correct responses beyond the loss",
    headline=roles.BEYOND_LOSS,
    claim=(
        "F3 beyond the loss: under Detailed CoT the layer curves (log nuclear norms) carry information on which "
        "response of a pair is irrelevant that the token losses lack: with the pair differences of the mean, "
        "largest and spread of the token losses and of log R partialled out inside each training fold, the "
        "out-of-fold AUROC of the residual curves exceeds what sign flips of whole pairs give (one-sided "
        "p < 2.5%; a permutation test, so never 'does not hold'); decided on the pairs whose two mean token "
        f"losses lie within {beyond_loss.CALIPER} nats wherever every dataset has at least "
        f"{beyond_loss.MIN_MATCHED} of them (drawn, or found by a run's loss screen); 'not applicable' where "
        "the loss alone separates every pair and "
        "too few match; None CoT shown beside"
    ),
    parts=g1_parts,
    chapters=GAP_CHAPTERS,
    calibrated_by=(rule.BEYOND_LOSS,),
    reads=beyond_loss.READS,
    after_pooling=beyond_loss.after_pooling,
    adjust=beyond_loss.matched_decides,
    note=covariates_note,
    gate=beyond_loss.separated,
    section=Section(
        title="Beyond the loss.",
        intro=(
            "{id} decides on the out-of-fold AUROC of the pairs' curve differences once the loss covariates are "
            "partialled out, against sign flips of whole pairs (its p-value; no interval)."
        ),
        lead=g1_lead,
        cell=g1_cell,
        table=auroc_table,
        closing=covariates_line,
        empty="**{id} not computed**: the store holds no loss, or no correct and irrelevant Detailed-CoT pairs.",
    ),
    battery=Fixture(
        verdicts=frozenset({HOLDS, UNRESOLVED, TOO_FEW, NOT_APPLICABLE}),  # a permutation test: never "does not hold"
        needs="correct and irrelevant Detailed-CoT responses with their token losses",
        truth=lambda: _inputs(beyond=1.0),
        falsity=lambda: _inputs(beyond=0.0),
        missing=lambda: _inputs(beyond=1.0, losses=False),
    ),
)

_LOSSES = {beyond_loss.LOSS: 1.0, beyond_loss.LOSS_MAX: 2.0, beyond_loss.LOSS_SD: 0.5}


def _inputs(*, beyond: float, losses: bool = True) -> Inputs:
    """Correct and irrelevant responses whose token losses are drawn alike (close enough that most
    pairs match), the irrelevant curves ``beyond`` higher in the late layers under both settings (no
    losses stored unless ``losses``)."""
    stats = _LOSSES if losses else {}

    def late_excess(layers: np.ndarray) -> np.ndarray:
        return beyond * (layers >= 6)

    settings = {
        f"{s}/{r}": Condition(curve=late_excess if r == "irrelevant" else 0.0, stats=stats)
        for s in ("none", "detailed")
        for r in ("correct", "irrelevant")
    }
    return model_inputs(settings, design=SampleDesign(stat_sd=0.2), sample_stats=beyond_loss.READS)
