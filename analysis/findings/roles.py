"""What each part of a check is, to the code that reads it back: parts are found by their role (and
their facet, ``rules.Part.facet``), never by their display name or their place in a list."""

from __future__ import annotations

from enum import Enum


class Role(Enum):
    """A part's meaning; its value is the one-line description the code map and tests read."""

    # F1 and A2: a gap over all layers, and that gap larger in the early layers than in the late ones
    F1_GAP = "None over Detailed CoT, all layers (F1)"
    EARLY_LATE = "the early over the late layers' ratio of a check's gap (F1, A2)"
    # F2
    ROUGHNESS = "a projection's faster vs slower roughness of the mean log curve (F2)"
    NONE_ROUGHNESS = "a projection's None vs Simplified roughness of the mean log curve (F2)"
    MEAN_CURVE_ROUGHNESS = "faster vs slower roughness of the mean curve, on the paper's scale (F2)"
    NONE_MEAN_CURVE_ROUGHNESS = "None vs Simplified roughness of the mean curve, on the paper's scale (F2)"
    MAD_RATIO = "the paper's MAD ratio of the faster over the slower setting's mean curves (F2)"
    LOG_SPREAD_CHANGE = "the change of None's log-scale spread across layers (F2)"
    # F3
    F3_GAP = "irrelevant over correct responses under Detailed CoT (F3)"
    NONE_SAME = "the root-mean-square per-layer irrelevant / correct ratio under None CoT (F3)"
    NONE_RD = "the signed irrelevant / correct ratio under None CoT (F3)"
    # F4
    SIZE_EXCESS = "the instruct model's squared separation over its base model's plus the margin (F4)"
    SIZE_RATIO = "the instruct over the base model's size of the Detailed irrelevant / correct ratio (F4)"
    SIGNED_RATIO = "the instruct over the base model's signed Detailed irrelevant / correct ratio (F4)"
    # F5
    SHARES = "Wiki's share of roughness kept less reasoning's (F5)"
    WIKI_ROUGHNESS = "the roughness of the Wiki curve at 100 words (F5)"
    REASONING_ROUGHNESS = "the roughness of the Simplified-CoT curve, pooled over reasoning (F5)"
    WIKI_SAME = "the root-mean-square per-layer irrelevant / correct ratio of the Wiki curves (F5)"
    WIKI_RD = "the signed irrelevant / correct ratio of the Wiki curves (F5)"
    WIKI_MAD = "the paper's Wiki MAD ratio, 1000 over 100 words (F5)"
    # L and L2
    GAP = "the Simplified vs Detailed gap the length checks are about"
    CONTENT = "the fast setting against Detailed CoT cut to its length (L)"
    LENGTH = "Detailed CoT cut to the fast setting's length against full Detailed CoT (L2)"
    SHARE = "the share of the gap left at equal length"
    SECOND_VIEW = "None CoT against Detailed CoT cut to its length (L, L2)"
    # A1
    BEYOND_AVERAGING = "what is left of the Frobenius gap beyond averaging: token size and alignment (A1)"
    FROBENIUS_GAP = "None over Detailed CoT of the Frobenius norm (A1)"
    AVERAGING = "what averaging over more response tokens alone predicts of that gap (A1)"
    NUCLEAR_BEYOND_AVERAGING = "what is left of F1's nuclear-norm gap beyond averaging (A1)"
    SHAPE = "the spectral shape's share of the nuclear-norm gap (A1)"
    TOKEN_SIZE = "the token-size share of what is left (A1, where the token energy is stored)"
    ALIGNMENT = "the alignment share of what is left (A1, where the token energy is stored)"
    # G1 (facet: the setting)
    BEYOND_LOSS = "the AUROC of the curves with the loss covariates partialled out (G1)"
    P_VALUE = "the one-sided sign-flip p-value of that AUROC (G1)"
    AUROC_LOSS = "the AUROC of the loss covariates alone (G1)"
    AUROC_CURVES = "the AUROC of the layer curves alone (G1)"
    LOSS_ORDER = "the share of pairs whose mean-loss difference has the majority sign (G1)"
    # A2 and A3
    SAME_TOKEN_GAP = "None over Detailed CoT on the answer tokens, all layers (A2)"
    SAME_TOKEN_FROBENIUS = "the same in Frobenius norm (A2)"
    CONTEXT_GAP = "None over another context on the answer tokens (A2; facet: the context)"
    EQUAL_LOSS_GAP = "that ratio at equal answer loss (A3)"
    SLOPE = "the slope of the log nuclear gap on the log(1 - p) gap (A3)"
    ANSWER_LOSS = "the answer's mean loss under one condition (A3; facet: the condition)"
    ANSWER_LOSS_CHANGE = "the answer's loss after Detailed CoT less after the phrase alone (A3)"
    # A5: reasoning or context
    CONTEXT_ORDER = "the answer's gradient after its own chain over after the same words shuffled (A5)"
    CONTEXT_FOREIGN = "the answer's gradient after its own chain over after another instruction's chain (A5)"
    # A4: the same Detailed-CoT text scored on fewer tokens
    SUBSET_GAP = "Detailed CoT scored on as many tokens as None CoT over scored on all of them (A4)"
    F1_SHARE = "the share of F1's log gap that scoring fewer tokens of the same text reproduces (A4)"
    # T1-T3 (facet: the slow arm for T2)
    SPEARMAN_CURVE = "the Spearman correlation of the step-0 curve with the weight change (T1)"
    SPEARMAN_DEPTH = "the absolute Spearman correlation of the layer index with the weight change (T1)"
    BEYOND_DEPTH = "the step-0 curve's correlation beyond the layer index's (T1)"
    ARM_EARLY = "None over a slower arm's weight change in the early layers (T2)"
    ARM_EARLY_LATE = "that ratio early over late (T2)"
    GAP_AT_START = "the probes' None / Detailed gap at step 0 (T3)"
    GAP_AFTER = "the probes' None / Detailed gap after training (T3)"
    GAP_CHANGE = "the change of that gap since step 0 (T3)"
    # the calibration's simulated parts and other one-part quantities
    SIMULATED = "the one part of a simulated rule or of a quantity decided alone"
