"""The first page's few sentences of what was found, each size the value of the part named beside it
and each count a count of that part's own verdicts."""

import math

from made_findings import finding, part

from analysis.findings import roles, scored_tokens
from analysis.findings.rules import Unit
from analysis.report import takeaway


def f1_and_a1(gap: float = 6.0, averaging: float = 5.0, rest: float = 0.5):
    return [
        finding("F1", "holds", parts=(part(math.log(gap), role=roles.F1_GAP),)),
        finding(
            "A1",
            "does not hold",
            parts=(
                part(-math.log(2.0), role=roles.BEYOND_AVERAGING),
                part(math.log(averaging), role=roles.AVERAGING, decides=False),
                part(math.log(rest), role=roles.NUCLEAR_BEYOND_AVERAGING, decides=False),
            ),
        ),
    ]


def test_the_f1_sentence_gives_the_gap_the_token_ratio_and_what_averaging_predicts():
    assert takeaway.f1_sentence(f1_and_a1()) == (
        "Fast thinking's gradient is x6 slow thinking's (None over Detailed CoT; F1's \"larger\": 1 holds), and the "
        "Detailed CoT's "
        "loss averages over 25 times more tokens, which alone predicts x5 (A1); beyond that averaging, None "
        "CoT's nuclear norm is x0.5 Detailed CoT's."
    )


def test_each_sentence_is_left_out_where_the_store_holds_nothing_for_it():
    assert takeaway.found([]) == ""
    only_f1 = takeaway.found([finding("F1", "holds", parts=(part(math.log(6.0), role=roles.F1_GAP),))])
    assert (
        only_f1 == "Fast thinking's gradient is x6 slow thinking's (None over Detailed CoT; F1's \"larger\": 1 holds)."
    )


def test_the_a4_sentence_gives_the_share_of_f1s_gap_and_counts_its_verdicts():
    parts = (
        part(math.log(5.0), role=scored_tokens.SUBSET_GAP),
        part(0.9, role=scored_tokens.F1_SHARE, bound=0.5, unit=Unit.SHARE),
    )
    text = takeaway.a4_sentence([finding("A4", "holds", parts=parts)])
    assert text.endswith(
        "makes the gradient x5 larger, 90% of F1's log gap (A4's \"at least half of F1's gap\": 1 holds)."
    )


def test_the_a2_sentence_counts_its_verdicts_and_gives_the_token_sum_reversal():
    a2 = [
        finding("A2", "does not hold", scope=s, parts=(part(-math.log(2.0), role=roles.SAME_TOKEN_GAP),))
        for s in ("math_reasoning", "commonsense_reasoning")
    ]
    assert takeaway.a2_sentence(a2, token_sum=[0.03, 0.04]) == (
        "Scoring only the final answer's own tokens, its gradient without reasoning before it over with reasoning "
        "is x0.5 (A2's \"smaller after reasoning\": 2 does not hold); under a loss summed over tokens F1's gap "
        "reverses (x0.03 to x0.04)."
    )
    assert takeaway.a2_sentence([], token_sum=[2.0]) == "Under a loss summed over tokens F1's gap stays (x2)."


def test_after_the_split_one_sentence_says_the_summed_loss_without_naming_a_check():
    assert takeaway.token_sum_sentence([]) == "" and takeaway.token_sum_sentence([float("nan")]) == ""
    reverses = takeaway.token_sum_sentence([0.05, 0.8])
    assert reverses.startswith("Under a loss summed over response tokens") and "reverses" in reverses
    assert "stays" in takeaway.token_sum_sentence([1.5, 2.0])
    assert "goes either way" in takeaway.token_sum_sentence([0.5, 2.0])
    assert not any(check in reverses for check in ("F1", "A1", "A2", "A4"))
