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
F1_GAP = Role("None over Detailed CoT, all layers")
EARLY_LATE = Role("the early over the late layers' ratio of a check's gap")
# F2
ROUGHNESS = Role("a projection's faster vs slower roughness of the mean log curve")
NONE_ROUGHNESS = Role("a projection's None vs Simplified roughness of the mean log curve")
MEAN_CURVE_ROUGHNESS = Role("faster vs slower roughness of the mean curve, on the paper's scale")
NONE_MEAN_CURVE_ROUGHNESS = Role("None vs Simplified roughness of the mean curve, on the paper's scale")
MAD_RATIO = Role("the paper's MAD ratio of the faster over the slower setting's mean curves")
LOG_SPREAD_CHANGE = Role("the change of None's log-scale spread across layers")
# F3
F3_GAP = Role("irrelevant over correct responses under Detailed CoT")
NONE_SAME = Role("the root-mean-square per-layer irrelevant / correct ratio under None CoT")
NONE_RD = Role("the signed irrelevant / correct ratio under None CoT")
# F4
SIZE_EXCESS = Role("the instruct model's squared separation over its base model's plus the margin")
SIZE_RATIO = Role("the instruct over the base model's size of the Detailed irrelevant / correct ratio")
SIGNED_RATIO = Role("the instruct over the base model's signed Detailed irrelevant / correct ratio")
# F5
SHARES = Role("Wiki's share of roughness kept less reasoning's")
WIKI_ROUGHNESS = Role("the roughness of the Wiki curve at 100 words")
REASONING_ROUGHNESS = Role("the roughness of the Simplified-CoT curve, pooled over reasoning")
WIKI_SAME = Role("the root-mean-square per-layer irrelevant / correct ratio of the Wiki curves")
WIKI_RD = Role("the signed irrelevant / correct ratio of the Wiki curves")
WIKI_MAD = Role("the paper's Wiki MAD ratio, 1000 over 100 words")
# L and L2
LENGTH_GAP = Role("the Simplified vs Detailed gap the length checks are about")
CONTENT = Role("the fast setting against Detailed CoT cut to its length")
LENGTH = Role("Detailed CoT cut to the fast setting's length against full Detailed CoT")
SHARE = Role("the share of the gap left at equal length")
SECOND_VIEW = Role("None CoT against Detailed CoT cut to its length")
# G1 (facet: the setting)
BEYOND_LOSS = Role("the AUROC of the curves with the loss covariates partialled out")
P_VALUE = Role("the one-sided sign-flip p-value of that AUROC")
AUROC_LOSS = Role("the AUROC of the loss covariates alone")
AUROC_CURVES = Role("the AUROC of the layer curves alone")
LOSS_ORDER = Role("the share of pairs whose mean-loss difference has the majority sign")
MATCHED_SHARE = Role("the share of pairs whose two mean losses lie within the caliper")
# S's reasoning step (the answer tokens after the phrase alone over after the Detailed CoT) and A3
REASONING_STEP = Role("the reasoning step: None over Detailed CoT on the answer tokens after the phrase, all layers")
SAME_TOKEN_FROBENIUS = Role("the reasoning step in Frobenius norm, on the instructions its two conditions hold")
CONTEXT_GAP = Role("None over another context on the answer tokens (facet: the context)")
EQUAL_LOSS_GAP = Role("that ratio at equal answer loss")
SLOPE = Role("the slope of the log nuclear gap on the log(1 - p) gap")
ANSWER_LOSS = Role("the answer's mean loss under one condition (facet: the condition)")
ANSWER_LOSS_CHANGE = Role("the answer's loss after Detailed CoT less after the phrase alone")
# T1-T3 (facet: the slow arm)
SPEARMAN_CURVE = Role("the Spearman correlation of the step-0 curve with the weight change")
SPEARMAN_DEPTH = Role("the absolute Spearman correlation of the layer index with the weight change")
BEYOND_DEPTH = Role("the step-0 curve's correlation beyond the layer index's")
ARM_EARLY = Role("None over a slower arm's weight change in the early layers")
ARM_EARLY_LATE = Role("that ratio early over late")
GAP_AT_START = Role("the probes' None / Detailed gap at step 0")
GAP_AFTER = Role("the probes' None / Detailed gap after training")
GAP_CHANGE = Role("the change of that gap since step 0")
# the calibration's simulated parts and other one-part quantities
SIMULATED = Role("the one part of a simulated rule or of a quantity decided alone")
