"""What each part of a check is, to the code that reads it back: parts are found by their role (and
their facet, ``rules.Part.facet``), never by their display name or their place in a list.

A role is a value compared by identity. The roles of the paper's checks and of those beyond it are
declared here; a new check may declare its own beside its parts function (``Role("...")``), so that
adding a check touches its parts, its registry entry and its methods paragraph only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class Role:
    """A part's meaning, in one line: the code map and the tests read it. Two roles are the same role
    only if they are the same object."""

    description: str


# F1 and S's reasoning step: a gap over all layers, and that gap larger in the early layers than in the late ones
F1_GAP = Role("None over Detailed CoT, all layers (F1)")
EARLY_LATE = Role("the early over the late layers' ratio of a check's gap (F1, S)")
# F2
ROUGHNESS = Role("a projection's faster vs slower roughness of the mean log curve (F2)")
NONE_ROUGHNESS = Role("a projection's None vs Simplified roughness of the mean log curve (F2)")
MEAN_CURVE_ROUGHNESS = Role("faster vs slower roughness of the mean curve, on the paper's scale (F2)")
NONE_MEAN_CURVE_ROUGHNESS = Role("None vs Simplified roughness of the mean curve, on the paper's scale (F2)")
MAD_RATIO = Role("the paper's MAD ratio of the faster over the slower setting's mean curves (F2)")
LOG_SPREAD_CHANGE = Role("the change of None's log-scale spread across layers (F2)")
# F3
F3_GAP = Role("irrelevant over correct responses under Detailed CoT (F3)")
NONE_SAME = Role("the root-mean-square per-layer irrelevant / correct ratio under None CoT (F3)")
NONE_RD = Role("the signed irrelevant / correct ratio under None CoT (F3)")
# F4
SIZE_EXCESS = Role("the instruct model's squared separation over its base model's plus the margin (F4)")
SIZE_RATIO = Role("the instruct over the base model's size of the Detailed irrelevant / correct ratio (F4)")
SIGNED_RATIO = Role("the instruct over the base model's signed Detailed irrelevant / correct ratio (F4)")
# F5
SHARES = Role("Wiki's share of roughness kept less reasoning's (F5)")
WIKI_ROUGHNESS = Role("the roughness of the Wiki curve at 100 words (F5)")
REASONING_ROUGHNESS = Role("the roughness of the Simplified-CoT curve, pooled over reasoning (F5)")
WIKI_SAME = Role("the root-mean-square per-layer irrelevant / correct ratio of the Wiki curves (F5)")
WIKI_RD = Role("the signed irrelevant / correct ratio of the Wiki curves (F5)")
WIKI_MAD = Role("the paper's Wiki MAD ratio, 1000 over 100 words (F5)")
# L and L2
GAP = Role("the Simplified vs Detailed gap the length checks are about")
CONTENT = Role("the fast setting against Detailed CoT cut to its length (L)")
LENGTH = Role("Detailed CoT cut to the fast setting's length against full Detailed CoT (L2)")
SHARE = Role("the share of the gap left at equal length")
SECOND_VIEW = Role("None CoT against Detailed CoT cut to its length (L, L2)")
# G1 (facet: the setting)
BEYOND_LOSS = Role("the AUROC of the curves with the loss covariates partialled out (G1)")
P_VALUE = Role("the one-sided sign-flip p-value of that AUROC (G1)")
AUROC_LOSS = Role("the AUROC of the loss covariates alone (G1)")
AUROC_CURVES = Role("the AUROC of the layer curves alone (G1)")
LOSS_ORDER = Role("the share of pairs whose mean-loss difference has the majority sign (G1)")
MATCHED_SHARE = Role("the share of pairs whose two mean losses lie within the caliper (G1)")
# S's reasoning step (the answer tokens after the phrase alone over after the Detailed CoT) and A3
SAME_TOKEN_GAP = Role("None over Detailed CoT on the answer tokens, all layers: S's reasoning step")
SAME_TOKEN_FROBENIUS = Role("the same in Frobenius norm (S)")
CONTEXT_GAP = Role("None over another context on the answer tokens (S; facet: the context)")
EQUAL_LOSS_GAP = Role("that ratio at equal answer loss (A3)")
SLOPE = Role("the slope of the log nuclear gap on the log(1 - p) gap (A3)")
ANSWER_LOSS = Role("the answer's mean loss under one condition (A3; facet: the condition)")
ANSWER_LOSS_CHANGE = Role("the answer's loss after Detailed CoT less after the phrase alone (A3)")
# T1-T3 (facet: the slow arm for T2)
SPEARMAN_CURVE = Role("the Spearman correlation of the step-0 curve with the weight change (T1)")
SPEARMAN_DEPTH = Role("the absolute Spearman correlation of the layer index with the weight change (T1)")
BEYOND_DEPTH = Role("the step-0 curve's correlation beyond the layer index's (T1)")
ARM_EARLY = Role("None over a slower arm's weight change in the early layers (T2)")
ARM_EARLY_LATE = Role("that ratio early over late (T2)")
GAP_AT_START = Role("the probes' None / Detailed gap at step 0 (T3)")
GAP_AFTER = Role("the probes' None / Detailed gap after training (T3)")
GAP_CHANGE = Role("the change of that gap since step 0 (T3)")
# the calibration's simulated parts and other one-part quantities
SIMULATED = Role("the one part of a simulated rule or of a quantity decided alone")
