"""G1: The layer curves tell irrelevant from correct responses beyond the loss."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.checks.check_chapters import GAP
from analysis.core import vocabulary
from analysis.findings import beyond_loss, roles
from analysis.findings.battery import Fixture, model_inputs
from analysis.findings.beyond_loss import COVARIATES, DECIDING, LOSS, READS, covariates_of, setting_parts
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED, CheckId, Note, NoteKind, Part
from analysis.findings.scopes import Inputs, PerModelCheck, Words
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
    chapters=GAP,
    calibrated_by=(rule.BEYOND_LOSS,),
    reads=beyond_loss.READS,
    after_pooling=beyond_loss.after_pooling,
    adjust=beyond_loss.matched_decides,
    note=covariates_note,
    gate=beyond_loss.separated,
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


BATTERY = Fixture(
    verdicts=frozenset({HOLDS, UNRESOLVED, TOO_FEW, NOT_APPLICABLE}),  # a permutation test: never "does not hold"
    needs="correct and irrelevant Detailed-CoT responses with their token losses",
    truth=lambda: _inputs(beyond=1.0),
    falsity=lambda: _inputs(beyond=0.0),
    missing=lambda: _inputs(beyond=1.0, losses=False),
)
