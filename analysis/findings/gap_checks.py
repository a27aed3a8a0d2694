"""The checks on where F1's and F3's gaps come from, declared once, in the registry's order (after
the paper's and the training runs' checks, ``analysis.findings.checks``): A1 and G1, F1 against
what averaging over the response tokens predicts and F3 against the loss; A2 and A3, F1 on the same
scored tokens; A4, F1 on the same text scored on fewer tokens; A5, A2's context controls.
"""

from __future__ import annotations

from analysis.findings import averaging, beyond_loss, context, roles, same_tokens, scored_tokens
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import SUMMARY_CHAPTERS, PerModelCheck, Words

GAP_CHAPTER = "where_the_gap_comes_from"  # the chapter that splits F1's and F3's gaps
_GAP = (*SUMMARY_CHAPTERS, GAP_CHAPTER)
_MARGIN = SAME_MARGIN_PERCENT

GAP_CHECKS = (
    # --- A1 and G1: F1 against what averaging over the response tokens predicts, F3 against the loss
    PerModelCheck(
        id=CheckId("A1"),
        lead=1,
        says=((roles.BEYOND_AVERAGING, "more than averaging predicts"),),
        words=Words(
            holds="more than averaging over more tokens predicts",
            fails="smaller than averaging over more tokens predicts: None CoT's token gradients are smaller or less aligned than Detailed CoT's",
            unresolved="not told apart from what averaging predicts",
        ),
        plain="In the Frobenius norm, fast thinking's larger gradient is more than averaging over fewer tokens",
        headline=roles.BEYOND_AVERAGING,
        beside=(roles.NUCLEAR_BEYOND_AVERAGING, "in F1's nuclear norm"),
        claim=(
            "F1 beyond averaging: None CoT's gap over Detailed CoT in mean log Frobenius norm exceeds what averaging "
            "over more response tokens alone predicts (1/2 log of R_Detailed / R_None): None CoT's sqrt(R)-scaled "
            "Frobenius norm, its token size and alignment together, is larger (geometric mean over instructions)"
        ),
        parts=averaging.a1_parts,
        chapters=_GAP,
        calibrated_by=(rule.AVERAGING,),
        reads=averaging.READS,
        unknown=averaging.a1_unknown,
    ),
    PerModelCheck(
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
        chapters=_GAP,
        calibrated_by=(rule.BEYOND_LOSS,),
        reads=beyond_loss.READS,
        after_pooling=beyond_loss.after_pooling,
        adjust=beyond_loss.matched_decides,
        note=beyond_loss.covariates_note,
        gate=beyond_loss.separated,
    ),
    # --- A2 and A3: F1 on the same scored tokens, the final answer after the same phrase
    PerModelCheck(
        id=CheckId("A2"),
        lead=2,
        says=((roles.SAME_TOKEN_GAP, "smaller after reasoning"), (roles.EARLY_LATE, "more so in early layers")),
        words=Words(
            holds="the answer's gradient is smaller after the reasoning, more so in the early layers",
            fails="the answer's gradient is not smaller after the reasoning, or not more so early",
            unresolved="these instructions do not decide how reasoning changes the answer's gradient",
        ),
        plain="On the answer tokens alone, reasoning before them makes their gradient smaller",
        headline=roles.SAME_TOKEN_GAP,
        claim=(
            "F1 on the same tokens: scoring only the final answer, after the same phrase, the answer's gradient "
            "without reasoning has larger nuclear norms than after the Detailed CoT (geometric mean over the "
            "instructions both hold, paired), and that ratio is larger in the early layers than in the late ones"
        ),
        parts=same_tokens.a2_parts,
        chapters=_GAP,
        calibrated_by=(rule.GAP,),
        reads=same_tokens.READS,
    ),
    PerModelCheck(
        id=CheckId("A3"),
        lead=2,
        says=((roles.EQUAL_LOSS_GAP, "smaller at equal answer loss"),),
        words=Words(
            holds="at equal answer loss the answer's gradient is still smaller after the reasoning",
            fails="at equal answer loss the answer's gradient is not smaller after the reasoning",
            unresolved="these instructions do not decide the gap at equal answer loss",
        ),
        plain="A2 holds also at equal answer loss",
        headline=roles.EQUAL_LOSS_GAP,
        claim=(
            "A2 beyond the answer's loss: where the answer is as predictable after the Detailed CoT as without it, "
            "the answer's gradient is still larger without reasoning (the intercept of the paired regression of "
            "A2's log nuclear-norm gap on the gap in the answer tokens' mean log(1 - p), its interval with the "
            "n - 2 degrees of freedom of a line; no verdict where the resamples leave the line undetermined)"
        ),
        parts=same_tokens.a3_parts,
        chapters=_GAP,
        calibrated_by=(rule.EQUAL_LOSS,),
        reads=same_tokens.READS,
        note=same_tokens.extrapolation_note,
        gate=same_tokens.line_determined,
    ),
    # --- A4: F1 on the same text, scored on as few tokens as the bare answer has
    PerModelCheck(
        id=CheckId("A4"),
        plain="Scoring as few Detailed-CoT tokens as the bare answer has reproduces at least half of F1's gap",
        lead=1,
        headline=scored_tokens.F1_SHARE,
        says=(
            (scored_tokens.SUBSET_GAP, "larger with fewer tokens scored"),
            (scored_tokens.F1_SHARE, "at least half of F1's gap"),
        ),
        words=Words(
            holds="scoring fewer tokens of the same text reproduces most of F1's gap",
            fails="scoring fewer tokens of the same text reproduces less than half of F1's gap",
            unresolved="these instructions do not decide how much of F1's gap scoring fewer tokens reproduces",
        ),
        claim=(
            "F1 on the same text: scoring a seeded random subset of the Detailed CoT's response tokens, as many "
            "as the instruction's None-CoT response has, gives larger nuclear norms than scoring all of them "
            "(geometric mean over the instructions the conditions share, paired), and that log gap is at least "
            f"{scored_tokens.SHARE_MARGIN:.0%} of F1's (None over Detailed CoT on the same instructions)"
        ),
        parts=scored_tokens.a4_parts,
        chapters=_GAP,
        calibrated_by=(rule.GAP, rule.GAP_SHARE),
        reads=scored_tokens.READS,
    ),
    # --- A5: A2's controls, the same answer after a context without the reasoning
    PerModelCheck(
        id=CheckId("A5"),
        plain="The answer's gradient after its own chain is nearly what the same words shuffled, or another chain, give",
        lead=2,
        headline=context.ORDER,
        says=(
            (context.ORDER, "nearly the same as after its words shuffled"),
            (context.FOREIGN, "nearly the same as after another chain"),
        ),
        words=Words(
            holds="any long context of the chain's words does what the reasoning does: the context, not the reasoning",
            fails="the chain's order or content changes the answer's gradient beyond its words and length",
            unresolved="these instructions do not tell the reasoning's effect from the context's",
        ),
        claim=(
            "A2 against its controls: scoring only the final answer after the same phrase, its gradient after the "
            "instruction's own Detailed CoT is nearly the same as after the same words shuffled and as after "
            "another instruction's Detailed CoT (each paired log ratio of nuclear norms, geometric mean over the "
            f"instructions both hold, within {_MARGIN}: two one-sided tests); A2's gap shown beside"
        ),
        parts=context.a5_parts,
        chapters=_GAP,
        calibrated_by=(rule.WITHIN,),
        reads=same_tokens.READS,
    ),
)
