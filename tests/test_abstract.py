"""The first page's abstract (``report.abstract``): its words follow what the store says, in at most
three sentences and 90 words, with no check named, at most one number per claim and ratios in times;
checked on stores that point each way."""

import math
import re

import pytest

from analysis import checks
from analysis.core import registry
from analysis.findings.rules import CLAIMED, Outcome
from analysis.report import abstract
from analysis.report.abstract import Cell, Facts

MAX_WORDS = 90
OFFLINE = tuple(registry.OFFLINE_MODELS)
FAMILIES = ("math_reasoning", "commonsense_reasoning")
L, S, D, U = Outcome.LARGER, Outcome.SMALLER, Outcome.DISAGREE, Outcome.UNRESOLVED


def cells(values, outcomes, models=OFFLINE):
    """One cell per model and family, in that order, of these log ratios and outcomes."""
    keys = [(m, f) for m in models for f in FAMILIES]
    return tuple(Cell(m, f, v, v - 0.1, v + 0.1, o) for (m, f), v, o in zip(keys, values, outcomes))


def facts(
    *,
    gap,
    summed=None,
    steps=None,
    reasoning=None,
    equal_loss=None,
    early=(),
    rougher=(),
    models=OFFLINE,
    instructions=5,
):
    n = len(models) * 2
    return Facts(
        models=models,
        datasets=6,
        families=FAMILIES,
        instructions=instructions,
        gap=gap,
        summed=summed if summed is not None else cells([-3.5] * n, [S] * n, models),
        steps=steps if steps is not None else (),
        reasoning=reasoning if reasoning is not None else (),
        equal_loss=equal_loss if equal_loss is not None else (),
        early=early,
        rougher=rougher,
    )


TODAY = facts(
    gap=cells([1.6, 2.2, 2.1, 2.3], [L] * 4),
    steps=(
        ('the phrase "The final answer is"', cells([0.3, 0.1, 0.3, 0.3], [L, U, L, L])),
        ("the reasoning itself", cells([-0.2, -0.4, 0.7, -0.6], [U, S, D, S])),
        ("how surprising the tokens are", cells([0.6, 0.9, 0.4, 1.0], [L] * 4)),
        ("how many tokens are averaged", cells([1.0, 1.0, 1.1, 1.0], [L] * 4)),
    ),
    reasoning=cells([-0.2, -0.4, 0.7, -0.6], [U, S, D, S]),
    equal_loss=cells([0.0, -0.1, 0.1, 0.0], [U] * 4),
    early=cells([0.05, 0.4, 0.7, 0.8], [U, L, L, L]),
    rougher=cells([math.nan] * 4, [S, U, U, S]),
)


TALLIES = tuple(
    abstract.Tally(m, f, *counts)
    for (m, f), counts in zip([(m, f) for m in OFFLINE for f in FAMILIES], [(3, 3, 2), (1, 0, 4), (3, 0, 5), (3, 2, 0)])
)


def text_of(f: Facts) -> str:
    return " ".join(abstract.sentences(f))


def _numbers(clause: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?(?: to \d+(?:\.\d+)?)? times", clause)


@pytest.mark.parametrize(
    "case",
    [
        TODAY,
        facts(gap=cells([-1.0, -1.2, -0.9, -1.1], [S] * 4)),  # reversed
        facts(gap=cells([0.1, -0.1, 0.05, 0.0], [U] * 4), summed=cells([0.2, -0.3, 0.1, 0.2], [L, S, L, L])),
        facts(gap=cells([1.5, 1.9, -1.0, -1.2], [L, L, S, S])),  # the models disagree
        facts(gap=cells([1.5, 0.2, 1.8, 1.9], [L, D, L, L]), reasoning=cells([0.5, 0.6, 0.4, 0.7], [L, D, L, L])),
        facts(
            gap=cells([1.2] * 20, [L] * 20, models=tuple(registry.PAPER_MODELS)),
            models=tuple(registry.PAPER_MODELS),
            instructions=500,
        ),
    ],
    ids=["today", "reversed", "undecided", "models disagree", "datasets disagree", "ten models"],
)
def test_the_abstract_is_three_plain_sentences_of_at_most_90_words(case):
    said = abstract.sentences(case)
    text = " ".join(said)
    assert 1 <= len(said) <= 3 and abstract.words(text) <= MAX_WORDS
    ids = "|".join(sorted(checks.all_ids(), key=len, reverse=True))
    assert not re.search(rf"(?<![\w-])({ids})(?![\w-])", text)  # no check named
    assert "%" not in text and "x" not in re.findall(r"\bx\d", text)  # ratios in times, no shares
    for clause in re.split(r"[;:] ", text):
        assert len(_numbers(clause)) <= 1, clause  # at most one number per claim


def test_the_words_follow_the_verdicts():
    assert text_of(TODAY).startswith(
        "Fast thinking's larger gradient (4.95 to 9.97 times slow thinking's, for every model and family) reproduces, "
        "but comes from averaging over slow thinking's many more tokens: summed, slow thinking's is 33.1 times "
        "larger."
    )
    reversed_ = facts(gap=cells([-1.0, -1.2, -0.9, -1.1], [S] * 4))
    assert text_of(reversed_).startswith(
        "Unlike the paper, slow thinking gives a 2.46 to 3.32 times larger gradient than fast thinking for both "
        "models in both families; summed over tokens, slow thinking's gradient is 33.1 times larger."
    )
    undecided = facts(gap=cells([0.1, -0.1, 0.05, 0.0], [U] * 4))
    assert text_of(undecided).startswith("These instructions do not decide whether fast thinking")
    models = facts(gap=cells([1.5, 1.9, -1.0, -1.2], [L, L, S, S]))
    assert "larger gradient than slow thinking for Gemma 3 270M in both families, " in (text_of(models))
    assert "but a smaller one for SmolLM2-135M-Instruct in both families; summed over tokens" in text_of(models)
    ten = facts(gap=cells([1.2] * 20, [L] * 19 + [U], models=tuple(registry.PAPER_MODELS)))
    assert "(3.32 times slow thinking's, in 19 of 20 model-family pairs) reproduces" in text_of(ten)
    one = facts(gap=cells([1.2, 0.1, 0.0, 0.1], [L, U, U, U]))
    assert "(3.32 times slow thinking's, for Gemma 3 270M on math reasoning) reproduces" in text_of(one)


def test_the_gap_comes_from_the_steps_that_carry_it_and_the_summed_loss_reverses_it():
    assert abstract.comes_from(TODAY) == (
        "Summed, slow thinking's is 33.1 times larger; its largest steps are how many tokens are averaged and how "
        "surprising the tokens are."
    )
    still = facts(gap=TODAY.gap, summed=cells([0.5, 0.7, 0.6, 0.6], [L] * 4), steps=TODAY.steps)
    assert abstract.comes_from(still) == (
        "Its largest steps are how many tokens are averaged and how surprising the tokens are; summed over "
        "tokens, fast thinking's is still 1.65 to 2.01 times larger."
    )
    # no step decided larger in most cells: no step is named, the split's figure shows them
    undecided = (("how surprising the tokens are", cells([0.6, 0.2, 0.4, 1.0], [U, U, L, U])),) + tuple(
        (w, cells([1.0, 1.0, 1.1, 1.0], [L, U, L, U])) for w in ["how many tokens are averaged"]
    )
    said = abstract.comes_from(facts(gap=TODAY.gap, steps=undecided))
    assert said.endswith("33.1 times larger.") and "how many" not in said
    one = facts(gap=TODAY.gap, steps=(TODAY.steps[1], TODAY.steps[3]))  # one step carries it
    assert abstract.comes_from(one).endswith("; its largest step is how many tokens are averaged.")


def test_an_undecided_gap_is_not_said_to_come_from_anything():
    undecided = facts(gap=cells([0.1, -0.1, 0.05, 0.0], [U] * 4))
    assert abstract.comes_from(undecided) == "Summed over tokens, slow thinking's gradient is 33.1 times larger."


def test_the_reasoning_sentence_says_where_the_answer_s_own_gradient_moves():
    # the gap is averaging's, and nothing shrinks the answer's gradient: what that says of the gap, first
    assert abstract.reasoning(TODAY) == (
        "The reasoning is not shown to cause the gap: scored on the answer's tokens alone, fast thinking's gradient "
        "is never reliably larger, even adjusted for the answer's predictability; slow thinking's is the larger for "
        "both models on commonsense reasoning."
    )
    assert abstract.reasoning(TODAY, why=False, adjusted=False, enlarges=False) == (
        "Scored on the answer's tokens alone, fast thinking's gradient is never reliably larger."
    )
    neither = facts(gap=TODAY.gap, reasoning=cells([0.1] * 4, [U] * 4), equal_loss=cells([0.1] * 4, [U, U, D, U]))
    assert abstract.reasoning(neither) == (
        "The reasoning is not shown to cause the gap: scored on the answer's tokens alone, neither gradient is "
        "reliably larger, even adjusted for the answer's predictability."
    )
    grows = facts(gap=TODAY.gap, reasoning=TODAY.reasoning, equal_loss=cells([-1.0, -0.8, 0.1, 0.0], [S, S, U, U]))
    assert abstract.reasoning(grows, why=False) == (  # larger after reasoning, adjusted, is said: no "even"
        "Scored on the answer's tokens alone, fast thinking's gradient is never reliably larger; slow thinking's is "
        "the larger for both models on commonsense reasoning; adjusted for the answer's predictability, it is larger after "
        "reasoning for Gemma 3 270M in both families and not resolved for SmolLM2-135M-Instruct in both families."
    )
    unexplained = facts(gap=cells([0.1, -0.1, 0.05, 0.0], [U] * 4), reasoning=TODAY.reasoning)
    assert abstract.reasoning(unexplained) == (  # no "only because" before it: its own lead
        "Beyond the paper, a chain of thought before the answer never reliably shrinks the gradient of the "
        "answer's own tokens, and enlarges it for both models on commonsense reasoning."
    )
    assert abstract.reasoning(grows, unresolved=False).endswith(
        "it is larger after reasoning for Gemma 3 270M in both families."
    )
    shrinks_adjusted = facts(
        gap=TODAY.gap, reasoning=TODAY.reasoning, equal_loss=cells([-1.0, 0.8, 0.1, 0.0], [S, L, U, U])
    )
    assert abstract.reasoning(shrinks_adjusted).endswith(
        "; adjusted for the answer's predictability, it is smaller after reasoning for Gemma 3 270M "
        "on commonsense reasoning, larger after reasoning for Gemma 3 270M on math reasoning and not resolved for "
        "SmolLM2-135M-Instruct in both families."
    )
    lowers = facts(gap=TODAY.gap, reasoning=TODAY.reasoning, equal_loss=cells([1.0, 0.0, 0.1, 0.0], [L, U, U, U]))
    assert abstract.reasoning(lowers).endswith(
        "; adjusted for the answer's predictability, it is smaller after reasoning for Gemma 3 270M "
        "on math reasoning and not resolved elsewhere."
    )
    shrinks = facts(gap=TODAY.gap, reasoning=cells([0.5, 0.6, 0.4, 0.7], [L] * 4))
    assert abstract.reasoning(shrinks).endswith("for both models in both families, as the paper's reading predicts.")
    some = facts(gap=TODAY.gap, reasoning=cells([0.5, 0.6, 0.4, -0.7], [L, L, U, S]), equal_loss=TODAY.equal_loss)
    assert abstract.reasoning(some) == (
        "Beyond the paper, a chain of thought before the answer shrinks the gradient of the answer's own tokens for Gemma 3 270M in both families only, "
        "and enlarges it for SmolLM2-135M-Instruct on commonsense reasoning; adjusted for the answer's "
        "predictability, this is not resolved."
    )
    mixed = cells([1.0, -1.0, 0.01, 0.0], [L, S, Outcome.SAME, U])
    assert abstract.reasoning(facts(gap=TODAY.gap, reasoning=TODAY.reasoning, equal_loss=mixed)).endswith(
        "it is smaller after reasoning for Gemma 3 270M on math reasoning, larger after reasoning for "
        "Gemma 3 270M on commonsense reasoning, about the same for SmolLM2-135M-Instruct on math reasoning and "
        "not resolved for SmolLM2-135M-Instruct on commonsense reasoning."
    )


def test_the_layer_sentence_gives_each_layer_claim_its_verdict():
    assert abstract.layers(TODAY) == (
        "Of the paper's layer claims, a larger gap in early layers reproduces in 3 of 4 model-family pairs, but "
        "fast thinking's larger variation across layers fails in 2 of 4 model-family pairs, not resolved in the other 2."
    )
    both = facts(gap=TODAY.gap, early=cells([0.4] * 4, [L] * 4), rougher=cells([math.nan] * 4, [L] * 4))
    assert abstract.layers(both) == (
        "Of the paper's layer claims, a larger gap in early layers reproduces for every model and family, and fast "
        "thinking's larger variation across layers for every model and family."
    )
    late = facts(gap=TODAY.gap, early=cells([-0.4] * 4, [S, S, U, U]), rougher=cells([math.nan] * 4, [L, U, U, U]))
    assert abstract.layers(late) == (
        "Of the paper's layer claims, a larger gap in early layers reverses for Gemma 3 270M in both families, not "
        "resolved elsewhere, but fast thinking's larger variation across layers reproduces for Gemma 3 270M on math "
        "reasoning."
    )
    open_ = facts(gap=TODAY.gap, early=cells([0.0] * 4, [U] * 4), rougher=cells([math.nan] * 4, [U, D, U, U]))
    assert abstract.layers(open_) == (
        "Of the paper's layer claims, a larger gap in early layers is not resolved, and fast thinking's larger "
        "variation across layers is not resolved."
    )
    assert abstract.layers(facts(gap=TODAY.gap)) == ""  # no layer check on the page: no sentence


def test_an_abstract_past_90_words_leaves_to_later_sections_what_they_show_in_a_stated_order():
    full = abstract.opening(TODAY) + " " + abstract.layers(TODAY) + " " + abstract.reasoning(TODAY)
    assert abstract.words(full) > MAX_WORDS and "largest steps" in full and "adjusted" in full
    said = " ".join(abstract.sentences(TODAY))
    assert abstract.words(said) <= MAX_WORDS and "largest steps" not in said  # the split's figure shows them
    assert "adjusted" not in said  # then the adjusted answer gradient, which the split's chapter shows
    assert "Of the paper's layer claims" not in said  # then the layer sentence's lead
    assert abstract.NOT_REASONING not in said  # then why the reasoning sentence matters
    assert " fails " in said  # where a layer claim fails stays
    assert abstract.sentences(TODAY)[1] == (  # the reasoning, after what the gap comes from
        "Scored on the answer's tokens alone, fast thinking's gradient is never reliably larger; slow thinking's is "
        "the larger for both models on commonsense reasoning."
    )
    short = facts(gap=TODAY.gap, steps=TODAY.steps)  # room for the steps: they are named
    assert "its largest steps are how many tokens are averaged" in " ".join(abstract.sentences(short))
    ten = facts(  # the paper's ten models, every claim undecided: the longest "where" the words can take
        gap=cells([1.2] * 20, [L, U] * 10, models=tuple(registry.PAPER_MODELS)),
        early=cells([0.2] * 20, [L, U, U, S] * 5, models=tuple(registry.PAPER_MODELS)),
        rougher=cells([math.nan] * 20, [L, S, U, U] * 5, models=tuple(registry.PAPER_MODELS)),
        reasoning=cells([0.2] * 20, [L, S, U, U] * 5, models=tuple(registry.PAPER_MODELS)),
        equal_loss=cells([0.2] * 20, [L, S, U, U] * 5, models=tuple(registry.PAPER_MODELS)),
        models=tuple(registry.PAPER_MODELS),
    )
    assert abstract.words(" ".join(abstract.sentences(ten))) <= MAX_WORDS


def test_the_scope_line_counts_models_datasets_and_instructions_one_way():
    line = abstract.scope_line(TODAY)
    assert line.startswith("*Two small stand-ins for the paper's 1.5-9B models, 4-bit quantised (")
    assert line.endswith(
        "; 6 datasets in two families (math reasoning and commonsense reasoning); 5 instructions per dataset (the "
        "paper: 500), so only large differences are resolved. Fast thinking: a bare answer; slow: a detailed chain of "
        "thought.*"
    )
    assert abstract.words(line) <= 50  # one line: with the title and the abstract, the first screen's words
    released = abstract.scope_line(Facts(**{**TODAY.__dict__, "instructions": None, "released": True}))
    assert released.endswith("; the original study's released statistics. " + abstract.DEFINED + "*")
    ten = facts(gap=(), models=tuple(registry.PAPER_MODELS), instructions=500)
    assert abstract.scope_line(ten).startswith("*The paper's ten models; ")


def test_the_figure_prints_each_bar_s_ratio_and_its_caption_defines_every_term():
    import matplotlib.pyplot as plt
    from matplotlib.container import ErrorbarContainer

    three = abstract.voice.three
    drawn = facts(
        gap=cells([1.6, 0.2, 2.1, 2.3], [L, U, L, L]),
        early=cells([0.05, 0.4, 0.7, -0.4], [U, L, D, S]),
        reasoning=TODAY.reasoning,  # the answer's tokens alone: the top panel's third bar
    )
    fig = abstract.figure(drawn, note="synthetic")
    try:
        assert len(fig.axes) == 2  # the gap under either loss, then its early over late layers; no comparisons
        texts = [t.get_text() for ax in fig.axes for t in ax.texts if "x" in t.get_text()[:2]]  # not the ends
        assert f" x{three(math.exp(1.6))}" in texts and len(texts) == 16  # one number per bar
        # below x1: printed left of its end, as how many times larger the other side is
        assert f"x{three(math.exp(3.5))} " in texts and f"x{three(math.exp(0.4))} " in texts
        # an undecided bar says so beside its number, a family whose datasets disagree too
        assert f" x{three(math.exp(0.2))} (not resolved)" in texts
        assert f" x{three(math.exp(0.7))} (datasets disagree)" in texts
        # a bar that settles nothing is pale inside (not resolved, or its family's datasets disagree)
        for ax, n_pale, n_bars in zip(fig.axes, (3, 2), (12, 4)):
            bars = [p for p in ax.patches if p.get_height() > 0]
            pale = [b for b in bars if b.get_facecolor()[3] == pytest.approx(abstract.PALE)]
            assert (len(pale), len(bars)) == (n_pale, n_bars) and not any(b.get_hatch() for b in bars)
        # what the pale bars mean, said once: on the first panel that has one
        assert [abstract.PALE_SAYS in ax.get_title() for ax in fig.axes] == [True, False]
        # each panel opens with its verdict in bold, in the abstract's words
        bold = [t.get_text().replace("\n", " ") for ax in fig.axes for t in ax.texts if t.get_fontweight() == "bold"]
        assert bold == [
            "Under the mean loss, fast's larger in 3 of 4 model-family pairs; summed, slow's larger; on the answer's "
            "tokens alone, slow's larger for both models on commonsense reasoning",
            "A larger gap in early layers reproduces for Gemma 3 270M on commonsense reasoning and reverses for "
            "SmolLM2-135M-Instruct on commonsense reasoning",
        ]
        # every cell with an interval has its whisker
        assert [sum(isinstance(c, ErrorbarContainer) for c in ax.containers) for ax in fig.axes] == [12, 4]
        # a legend names the series only (a pale bar says in words why it settles nothing); one series, none
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
            "mean over tokens (the paper's)",
            "sum over tokens",
            "the answer's tokens alone",
        ]
        assert fig.axes[1].get_legend() is None
    finally:
        plt.close(fig)
    no_interval = tuple(abstract.Cell(c.model, c.scope, c.value, math.nan, math.nan, c.outcome) for c in TODAY.summed)
    fig = abstract.figure(Facts(**{**TODAY.__dict__, "summed": no_interval, "reasoning": ()}), note=None)
    try:  # the summed loss's cells have no interval: no whisker, and no pale bar means no line on pale
        assert sum(isinstance(c, ErrorbarContainer) for c in fig.axes[0].containers) == 4
        assert abstract.PALE_SAYS not in fig.axes[0].get_title()
    finally:
        plt.close(fig)
    counted = Facts(**{**TODAY.__dict__, "comparisons": TALLIES})
    fig = abstract.figure(counted, note=None)
    try:  # the variation claim last: one stacked bar a cell, each side's count printed inside it
        assert len(fig.axes) == 3 and fig.axes[2].get_title() == abstract.TALLY_TITLE
        inside = [t.get_text() for t in fig.axes[2].texts]
        counts, verdicts = inside[:9], inside[9:13]
        assert [t.replace("\n", " ") for t in inside[13:]] == [  # its verdict, in the abstract's words
            "Fast thinking's larger variation across layers fails in 2 of 4 model-family pairs, not resolved in the other 2"
        ]
        assert counts == ["3", "1", "3", "3", "3", "2", "2", "4", "5"]  # each side in turn (held, against, open)
        assert verdicts == ["fails", "not resolved", "not resolved", "fails"]  # each row's, at its end
        assert "One comparison per projection\n(Q, K, V, O) and pair of settings" in fig.axes[2].get_title()
        widths = [p.get_width() for p in fig.axes[2].patches]
        assert sum(widths) == sum(t.held + t.against + t.open for t in TALLIES)
    finally:
        plt.close(fig)
    only_gap = abstract.figure(facts(gap=TODAY.gap), note=None)  # no layer cell: no empty panel
    try:
        assert len(only_gap.axes) == 1
    finally:
        plt.close(only_gap)
    said = abstract.caption(TODAY)
    for term in (
        "None CoT",
        "Detailed CoT",
        "*Gradient*",
        "summed",
        "early layers",
        "either loss",
        "log scale",
        "pale",
        "whisker",
        "*not resolved*",
        "*datasets disagree*",
        "The answer's tokens alone",
    ):
        assert term in said
    assert "Last:" in abstract.caption(counted) and "Last:" not in said  # the last panel's words where it is
    assert "Below:" not in abstract.caption(facts(gap=TODAY.gap))  # no lower panel: not described
    assert "tokens alone" not in abstract.caption(facts(gap=TODAY.gap, reasoning=()))  # no such bars: not defined


def test_a_claim_of_many_comparisons_is_counted_per_cell_by_outcome():
    from types import SimpleNamespace

    from analysis.findings.rules import Verdict

    def part(outcome, side="above", decides=True, below=1.0):  # decided against its side: the claim false
        against = outcome in (L, S) and outcome is not CLAIMED[side]  # ... at every level below ``below``
        return SimpleNamespace(
            outcome=outcome,
            side=side,
            decides=decides,
            estimate=object(),
            contradicts=lambda level: against and level < below,
        )

    def cell(model, scope, parts, verdict=Verdict.FAILS, pooled=True):
        return SimpleNamespace(check="C", model=model, scope=scope, parts=parts, verdict=verdict, pooled=pooled)

    found = [
        cell(  # against at 95% but not over its five deciding parts (Bonferroni): open, not against
            "m", "math_reasoning", [part(L), part(S), part(U), part(L), part(S, below=0.97), part(S, decides=False)]
        ),
        cell("m", "commonsense_reasoning", [part(S, side="below"), part(L, side="below"), part(D)]),
        cell("m", "gsm8k", [part(L)], pooled=False),  # a dataset beside its family: not a cell of its own
        cell("n", "math_reasoning", [part(L)], verdict=Verdict.NOT_APPLICABLE),  # not tested: not counted
        SimpleNamespace(check="other", model="m", scope="math_reasoning", parts=[part(L)], verdict=None, pooled=True),
    ]
    assert abstract.tallies(found, "C") == (
        abstract.Tally("m", "math_reasoning", held=2, against=1, open=2),
        abstract.Tally("m", "commonsense_reasoning", held=1, against=1, open=1),
    )
    assert abstract.tallies(found, None) == ()


def test_where_names_what_every_cell_covers_and_counts_the_rest():
    every = cells([0.1] * 4, [L] * 4)
    gemma, smol = every[:2], every[2:]
    assert abstract.where(every, every) == "for both models in both families"
    assert abstract.where(gemma, gemma) == "for Gemma 3 270M in both families"  # a store of one model
    assert abstract.where(every[1::2], every) == "for both models on commonsense reasoning"
    assert abstract.where(smol[:1], every) == "for SmolLM2-135M-Instruct on math reasoning"
    assert abstract.where(every[:3], every) == "in 3 of 4 model-family pairs"
    missing = every[:3]  # no SmolLM2 commonsense cell: not "both models in both families"
    assert abstract.where(missing, missing) == "in all three model-family pairs"
