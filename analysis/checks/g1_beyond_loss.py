"""G1: The layer curves tell irrelevant from correct responses beyond the loss."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import beyond_loss, roles
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PerModelCheck, Words

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
    parts=beyond_loss.g1_parts,
    chapters=GAP,
    calibrated_by=(rule.BEYOND_LOSS,),
    reads=beyond_loss.READS,
    after_pooling=beyond_loss.after_pooling,
    adjust=beyond_loss.matched_decides,
    note=beyond_loss.covariates_note,
    gate=beyond_loss.separated,
)
