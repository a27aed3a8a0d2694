"""The first page's few sentences of what was found, each size the value of the part named beside it
and each count a count of that part's own verdicts."""

import math

from made_findings import finding, part

from analysis.findings import roles
from analysis.report import takeaway


def test_the_f1_sentence_gives_the_gap_and_counts_its_verdicts():
    f1 = [finding("F1", "holds", parts=(part(math.log(6.0), role=roles.F1_GAP),))]
    assert takeaway.f1_sentence(f1) == (
        "Fast thinking's gradient is x6 slow thinking's (None over Detailed CoT; F1's \"larger\": 1 holds)."
    )


def test_each_sentence_is_left_out_where_the_store_holds_nothing_for_it():
    assert takeaway.found([]) == ""
    only_f1 = takeaway.found([finding("F1", "holds", parts=(part(math.log(6.0), role=roles.F1_GAP),))])
    assert (
        only_f1 == "Fast thinking's gradient is x6 slow thinking's (None over Detailed CoT; F1's \"larger\": 1 holds)."
    )


def test_the_reasoning_sentence_counts_its_verdicts_and_gives_the_token_sum_reversal():
    s = [
        finding("S", "does not hold", scope=s, parts=(part(-math.log(2.0), role=roles.REASONING_STEP),))
        for s in ("math_reasoning", "commonsense_reasoning")
    ]
    assert takeaway.reasoning_sentence(s, token_sum=[0.03, 0.04]) == (
        "Scoring only the final answer's own tokens, its gradient without reasoning before it over with reasoning "
        'is x0.5 (S\'s "smaller after reasoning": 2 does not hold); under a loss summed over tokens the gap '
        "reverses (x0.03 to x0.04)."
    )
    assert takeaway.reasoning_sentence([], token_sum=[2.0]) == "Under a loss summed over tokens the gap stays (x2)."
    f1 = [finding("F1", "holds", parts=(part(math.log(6.0), role=roles.F1_GAP),))]
    assert "summed over tokens F1's gap stays" in takeaway.reasoning_sentence(f1, token_sum=[2.0])  # named by its check


def test_after_the_split_one_sentence_says_the_summed_loss_without_naming_a_check():
    assert takeaway.token_sum_sentence([]) == "" and takeaway.token_sum_sentence([float("nan")]) == ""
    reverses = takeaway.token_sum_sentence([0.05, 0.8])
    assert reverses.startswith("Under a loss summed over response tokens") and "reverses" in reverses
    assert "stays" in takeaway.token_sum_sentence([1.5, 2.0])
    assert "goes either way" in takeaway.token_sum_sentence([0.5, 2.0])
    assert not any(check in reverses for check in ("F1", "S", "A3"))
