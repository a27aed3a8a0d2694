"""The study's vocabulary: datasets, families, settings, projections and how the book names them.

Every module that orders, labels or groups conditions takes it from here, so a new setting or a
renamed label changes in one place. The data files behind the names are in ``analysis.data``,
which takes its names from here.
"""

from __future__ import annotations

from analysis.core import layer_stats

PROJECTIONS = ("q", "k", "v", "o")
SEGMENTS = ("early", "middle", "late")
CORRECT, IRRELEVANT = "correct", "irrelevant"
RESPONSES = (CORRECT, IRRELEVANT)

REASONING_DATASETS = ("aqua", "gsm8k", "strategyqa", "ecqa", "creak", "sensemaking")
MATH_REASONING = ("aqua", "gsm8k", "math-algebra", "math-counting", "math-geometry")
COMMONSENSE_REASONING = ("strategyqa", "ecqa", "creak", "sensemaking")
COT_SETTINGS = ("none", "simplified", "detailed")  # fast to slow thinking
WIKI_SETTINGS = ("len100", "len500", "len1000", "unpopular")
# Detailed CoT cut to the response length of a faster setting: setting -> the setting it is cut to
LENGTH_CONTROL_SETTINGS = {"detailed_cut_simplified": "simplified", "detailed_cut_none": "none"}
# The answer-scored settings of correct responses: the loss on the final answer's tokens only, the
# answer being the same instruction's None-CoT response after ANSWER_PHRASE; what precedes the phrase:
# nothing, the Simplified-CoT rationale, the Detailed CoT, another instruction's Detailed CoT, the
# instruction's own Detailed CoT with its words shuffled (the same words, no reasoning order).
ANSWER_PHRASE = "The final answer is "
ANSWER_SETTINGS = (
    "none_answer",
    "simplified_answer",
    "detailed_answer",
    "detailed_other_answer",
    "detailed_shuffled_answer",
)
# The scored-subset settings of correct responses: the whole Detailed CoT read as it is, its loss on a
# seeded random subset of its response tokens as many as the setting scores: setting -> that setting
# (the answer's tokens after the Detailed CoT and the phrase, so that "which tokens" compares equal counts).
SCORED_SUBSET_SETTINGS = {"detailed_scored_answer": "detailed_answer"}
# The loss-matched settings of correct responses: setting -> the answer-scored setting whose text it
# reads (the Detailed CoT, the phrase and the answer); its loss scores as many of that text's chain
# tokens as the answer has, each drawn among those whose token loss lies within a caliper of one answer
# token's (``analysis.extract.loss_matching``), so that "which tokens" compares equal counts at equal loss.
LOSS_MATCHED_SETTINGS = {"detailed_matched_answer": "detailed_answer"}
STUDY_SETTINGS = (*COT_SETTINGS, *WIKI_SETTINGS)
CUT_SETTINGS = tuple(LENGTH_CONTROL_SETTINGS)
SETTING_ORDER = (
    STUDY_SETTINGS + CUT_SETTINGS + tuple(SCORED_SUBSET_SETTINGS) + tuple(LOSS_MATCHED_SETTINGS) + ANSWER_SETTINGS
)
WIKI_DATASET = "wiki"

MATH = "math_reasoning"
COMMONSENSE = "commonsense_reasoning"
WIKI = "wiki_knowledge"
FAMILY_DATASETS = {MATH: MATH_REASONING, COMMONSENSE: COMMONSENSE_REASONING, WIKI: (WIKI_DATASET,)}
REASONING_FAMILIES = (MATH, COMMONSENSE)
FAMILY_LABELS = {MATH: "math reasoning", COMMONSENSE: "commonsense reasoning", WIKI: "Wiki knowledge"}
DATASET_ORDER = (*MATH_REASONING, *COMMONSENSE_REASONING, WIKI_DATASET)

SETTING_LABELS = {
    "none": "None CoT",
    "simplified": "Simplified CoT",
    "detailed": "Detailed CoT",
    "len100": "Wiki ~100 words",
    "len500": "Wiki ~500 words",
    "len1000": "Wiki ~1000 words",
    "unpopular": "Wiki unpopular",
    "detailed_cut_simplified": "Detailed CoT cut to simplified length",
    "detailed_cut_none": "Detailed CoT cut to no-CoT length",
    "detailed_scored_answer": "Detailed CoT scored on as many tokens as its answer",
    "detailed_matched_answer": "Detailed CoT scored on as many tokens as its answer, matched in loss",
    "none_answer": "answer after the phrase alone",
    "simplified_answer": "answer after Simplified CoT",
    "detailed_answer": "answer after Detailed CoT",
    "detailed_other_answer": "answer after another instruction's Detailed CoT",
    "detailed_shuffled_answer": "answer after its own Detailed CoT, words shuffled",
}
STAT_LABELS = layer_stats.labels()  # declared with each statistic in analysis.core.layer_stats


def family_of(dataset: str) -> str:
    """The family (math reasoning, commonsense reasoning, Wiki knowledge) a dataset belongs to."""
    for family, datasets in FAMILY_DATASETS.items():
        if dataset in datasets:
            return family
    raise ValueError(f"unknown dataset {dataset!r}; datasets: {', '.join(DATASET_ORDER)}")


def dataset_rank(dataset: str) -> int:
    """Position of a dataset in the book's order (unknown datasets last)."""
    return DATASET_ORDER.index(dataset) if dataset in DATASET_ORDER else len(DATASET_ORDER)


def setting_rank(setting: str) -> int:
    """Position of a setting in the book's order, fast to slow thinking (unknown settings last)."""
    return SETTING_ORDER.index(setting) if setting in SETTING_ORDER else len(SETTING_ORDER)


def setting_label(setting: str) -> str:
    """How the book names a setting, e.g. "Detailed CoT"."""
    return SETTING_LABELS.get(setting, setting)


def scope_label(scope: str) -> str:
    """How the book names a scope of a finding: a family label or the dataset's own name."""
    return FAMILY_LABELS.get(scope, scope)
