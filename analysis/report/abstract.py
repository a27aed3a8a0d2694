"""The abstract that opens a book's first page: one line of scope, then at most three plain sentences
(90 words at most) on what reproduces and what the gap comes from, what becomes of the paper's layer
claims, and what the reasoning does to the answer's own gradient; and the one figure that shows the
gap under either loss and the layer claim that has a number.

Everything is read from the page's findings through the roles the checks declare, never through
their ids (``Facts.of_page``): fast over slow thinking's gap (``roles.F1_GAP``) and its early over
late layers (``roles.EARLY_LATE`` of the same check), the verdicts of the check whose parts compare
roughness (``roles.ROUGHNESS``), the steps of the check that declares a chain, the reasoning step
(``roles.REASONING_STEP``) and its value at equal answer loss (``roles.EQUAL_LOSS_GAP``), and the
gap under a loss summed over tokens (``loss_convention``). The words follow the outcomes
(``rules.Part.outcome``) of the cells a summary reads (a family's, else each dataset's), so that a
store that points another way is worded another way (``sentences``); each claim carries at most one
number, a range over models counting as one, ratios always in "times".
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from analysis.core import registry as model_registry
from analysis.core import vocabulary
from analysis.findings import roles
from analysis.findings.roles import Role
from analysis.findings.rules import CLAIMED, Finding, Outcome, Verdict, contradicting
from analysis.profiles import PAPER_SAMPLES
from analysis.report import cells, chain, loss_convention, plots, voice


@dataclass(frozen=True)
class Cell:
    """One answered cell of one quantity: a model on a family (or a dataset where it has no family),
    its log ratio and interval, and its outcome."""

    model: str
    scope: str
    value: float
    low: float
    high: float
    outcome: Outcome


@dataclass(frozen=True)
class Tally:
    """One cell of a claim made of many comparisons (a projection and a pair of settings each): how
    many are decided on the claim's side, how many against it, how many neither."""

    model: str
    scope: str
    held: int
    against: int
    open: int


@dataclass(frozen=True)
class Facts:
    """What the abstract reads of a page: its models and sizes, and the cells of each quantity."""

    models: tuple[str, ...]
    datasets: int
    families: tuple[str, ...]  # the families the datasets fall in, in the book's order
    instructions: int | None
    gap: tuple[Cell, ...]
    summed: tuple[Cell, ...]
    steps: tuple[tuple[str, tuple[Cell, ...]], ...]  # each step's words and cells, in the chain's order
    reasoning: tuple[Cell, ...]
    equal_loss: tuple[Cell, ...]
    early: tuple[Cell, ...] = ()  # the gap's early over late layers
    rougher: tuple[Cell, ...] = ()  # whether faster thinking's curve varies more from layer to layer
    comparisons: tuple[Tally, ...] = ()  # that claim's comparisons per cell, by how each is decided
    released: bool = False  # the numbers are the original study's released statistics

    @classmethod
    def of_page(cls, page) -> Facts:
        """The facts of a page's findings and store."""
        found = page.findings()
        datasets = {f.scope for f in found if not f.pooled and f.scope in vocabulary.DATASET_ORDER}
        families = {vocabulary.family_of(d) for d in datasets}
        steps: tuple[tuple[str, tuple[Cell, ...]], ...] = ()
        check = chain.chain_check(page.registry, among=page.checks())
        if check is not None and check.chain is not None:
            steps = tuple((s.words, role_cells(found, s.role, deciding=False)) for s in check.chain.steps)
        return cls(
            models=tuple(page.models),
            datasets=len(datasets),
            families=tuple(f for f in vocabulary.FAMILY_LABELS if f in families),
            instructions=page.n_samples,
            gap=role_cells(found, roles.F1_GAP),
            summed=summed_cells(loss_convention.gap_table(page)),
            steps=steps,
            reasoning=role_cells(found, roles.REASONING_STEP),
            equal_loss=role_cells(found, roles.EQUAL_LOSS_GAP),
            early=role_cells(found, roles.EARLY_LATE, check=_deciding_check(found, roles.F1_GAP)),
            rougher=verdict_cells(found, _deciding_check(found, roles.ROUGHNESS)),
            comparisons=tallies(found, _deciding_check(found, roles.ROUGHNESS)),
            released=bool(page.imported),
        )


def _answered(findings: Sequence[Finding], check: str) -> list[Finding]:
    """The cells a summary reads of one check, model by model (``cells.answers``)."""
    models = dict.fromkeys(f.model for f in findings)
    return [a for m in models for a in cells.answers([f for f in findings if f.check == check and f.model == m])]


def _deciding_check(findings: Sequence[Finding], role: Role, *, deciding: bool = True) -> str | None:
    """The check whose part of that role decides (``deciding``; else any check that has the part in
    its first norm)."""
    return next((f.check for f in findings if (p := f.part(role)) is not None and (p.decides or not deciding)), None)


def role_cells(
    findings: Sequence[Finding], role: Role, *, deciding: bool = True, check: str | None = None
) -> tuple[Cell, ...]:
    """The cells a summary reads of one part: of ``check``, else of the check whose part of that role
    decides (``_deciding_check``), one per model and family (else dataset)."""
    check = check or _deciding_check(findings, role, deciding=deciding)
    if check is None:
        return ()
    out = []
    for f in _answered(findings, check):
        part = f.part(role, facet=())
        if part is not None and part.estimate is not None and np.isfinite(part.value):
            low, high = part.interval()
            out.append(Cell(f.model, f.scope, part.value, low, high, part.outcome))
    return tuple(out)


# A check's verdict as the outcome of its cell: holding is the paper's side.
VERDICT_OUTCOME = {
    Verdict.HOLDS: Outcome.LARGER,
    Verdict.FAILS: Outcome.SMALLER,
    Verdict.DISAGREE: Outcome.DISAGREE,
    Verdict.TOO_FEW: Outcome.TOO_FEW,
}


def verdict_cells(findings: Sequence[Finding], check: str | None) -> tuple[Cell, ...]:
    """The cells a summary reads of a check of several parts (one per projection, say), each as its
    verdict (``VERDICT_OUTCOME``; anything else undecided); none without the check."""
    if check is None:
        return ()
    out = []
    for f in _answered(findings, check):
        if f.verdict is not Verdict.NOT_APPLICABLE:
            outcome = VERDICT_OUTCOME.get(f.verdict, Outcome.UNRESOLVED)
            out.append(Cell(f.model, f.scope, math.nan, math.nan, math.nan, outcome))
    return tuple(out)


def tallies(findings: Sequence[Finding], check: str | None) -> tuple[Tally, ...]:
    """Per cell a summary reads of a check of many parts, its deciding parts counted by outcome: on
    the claim's side (``rules.CLAIMED``), showing it false (``rules.contradicting``), or neither; so
    the claim holds where every part is on its side and fails where one shows it false."""
    if check is None:
        return ()
    out = []
    for f in _answered(findings, check):
        deciding = [p for p in f.parts if p.decides and p.estimate is not None]
        if f.verdict is Verdict.NOT_APPLICABLE or not deciding:
            continue
        held = sum(p.outcome is CLAIMED[p.side] for p in deciding)
        against = len(contradicting(deciding))  # the claim fails exactly where there is one
        out.append(Tally(f.model, f.scope, held, against, len(deciding) - held - against))
    return tuple(out)


def summed_cells(table) -> tuple[Cell, ...]:
    """Fast over slow thinking's gap under a loss summed over tokens, per model and family (per
    dataset where no family has two), from ``loss_convention.gap_table``."""
    if table.empty:
        return ()
    families = table[table["scope"].isin(vocabulary.FAMILY_LABELS.values())]
    shown = families if not families.empty else table
    scope_of = {label: key for key, label in vocabulary.FAMILY_LABELS.items()}  # the table prints labels
    out = []
    for _, row in shown.iterrows():
        value = float(row["_sum"])
        outcome = Outcome.LARGER if value > 0 else Outcome.SMALLER
        scope = scope_of.get(str(row["scope"]), str(row["scope"]))
        out.append(Cell(str(row["model"]), scope, value, math.nan, math.nan, outcome))
    return tuple(out)


# --------------------------------------------------------------------------- the words


def times(log_values: Sequence[float], *, inverse: bool = False) -> str:
    """Log ratios as "4.8 to 9.5 times" (of their exponentials; ``inverse``: of their reciprocals),
    three significant figures each, one number where both ends read alike."""
    ratios = sorted(math.exp(-v if inverse else v) for v in log_values if math.isfinite(v))
    if not ratios:
        return ""
    low, high = (voice.three(r) for r in (ratios[0], ratios[-1]))
    return f"{low} times" if low == high else f"{low} to {high} times"


def _share(items: Sequence[Cell], outcome: Outcome) -> tuple[list[Cell], int]:
    return [c for c in items if c.outcome is outcome], len(items)


def _all(n: int, nouns: str) -> str:
    """ "both models", "all three families"."""
    return f"both {nouns}" if n == 2 else f"all {voice.number(n)} {nouns}"


def where(chosen: Sequence[Cell], every: Sequence[Cell]) -> str:
    """Where ``chosen`` lie among ``every`` (cells of one quantity), in words a reader reads without
    a legend: "for both models in both families", "for Gemma 3 270M in both families", "for
    Gemma 3 270M on math reasoning", else "in 2 of 5 model-family pairs"."""
    models = list(dict.fromkeys(c.model for c in every))
    families = list(dict.fromkeys(c.scope for c in every))
    if not chosen:
        return "nowhere"
    if len(chosen) == 1:
        (cell,) = chosen
        return f"for {_short(cell.model)} on {vocabulary.scope_label(cell.scope)}"
    mine = list(dict.fromkeys(c.model for c in chosen))
    whole = all({c.scope for c in chosen if c.model == m} == set(families) for m in mine)  # every family
    on = f"on {vocabulary.scope_label(families[0])}" if len(families) == 1 else f"in {_all(len(families), 'families')}"
    if whole and len(mine) == len(models) > 1:
        return f"for {_all(len(models), 'models')} {on}"
    if whole and len(mine) <= 2:
        return f"for {voice.listed([_short(m) for m in mine])} {on}"
    scopes = list(dict.fromkeys(c.scope for c in chosen))
    if len(mine) == len(models) > 1 and len(chosen) == len(models) * len(scopes):  # every model, some families
        return f"for {_all(len(models), 'models')} on {voice.listed([vocabulary.scope_label(f) for f in scopes])}"
    if len(chosen) == len(every):
        return f"in all {voice.number(len(every))} model-family pairs"
    return f"in {len(chosen)} of {len(every)} model-family pairs"


def scope_line(facts: Facts) -> str:
    """The one line of scope: models, datasets and instructions per dataset, and what fast and slow
    thinking are (``DEFINED``)."""
    names = [_described(m) for m in facts.models]
    if set(facts.models) <= set(model_registry.OFFLINE_MODELS):
        small = f"{voice.number(len(names)).capitalize()} small stand-ins for the paper's 1.5-9B models"
        who = f"{small}, 4-bit quantised ({voice.listed(names)})"
    elif len(names) >= 10:
        who = f"The paper's {voice.number(len(names))} models"
    else:
        who = voice.listed(names)
    size = f"{facts.instructions} instructions per dataset" if facts.instructions else "every instruction"
    if facts.released:
        size = "the original study's released statistics"
    if facts.instructions and facts.instructions < PAPER_SAMPLES:
        size += f" (the paper: {PAPER_SAMPLES}), so only large differences are resolved"
    kinds = voice.listed([vocabulary.FAMILY_LABELS[f] for f in facts.families])
    families = f" in {voice.number(len(facts.families))} families ({kinds})" if len(facts.families) > 1 else ""
    return f"*{who}; {voice.plural(facts.datasets, 'dataset')}{families}; {size}. {DEFINED}*"


def _described(model: str) -> str:
    info = model_registry.known_model(model)
    return info.description.split(",")[0] if info is not None else model


FAST, SLOW = "fast thinking", "slow thinking"
# What the two words mean, said once in the scope line rather than in the abstract's sentences.
DEFINED = "Fast thinking: a bare answer; slow: a detailed chain of thought."


def reproduces(facts: Facts) -> str:
    """What reproduces: fast thinking's larger gradient, where and how much larger, and where the
    reverse holds; that it holds only because the loss averages over tokens, where the summed loss
    reverses it (``_averaging_explains``)."""
    if not facts.gap:
        return ""
    larger = _share(facts.gap, Outcome.LARGER)[0]
    smaller = _share(facts.gap, Outcome.SMALLER)[0]
    because = ", but comes from averaging over slow thinking's many more tokens" if _averaging_explains(facts) else ""
    if larger and smaller:
        size = times([c.value for c in larger])
        return (
            f"{FAST.capitalize()} gives a {size} larger gradient than {SLOW} {where(larger, facts.gap)}, as the "
            f"paper reports, but a smaller one {where(smaller, facts.gap)}."
        )
    if larger:
        size = times([c.value for c in larger])
        everywhere = "for every model and family" if len(larger) == len(facts.gap) > 1 else where(larger, facts.gap)
        return f"Fast thinking's larger gradient ({size} slow thinking's, {everywhere}) reproduces{because}."
    if smaller:
        size = times([c.value for c in smaller], inverse=True)
        return f"Unlike the paper, {SLOW} gives a {size} larger gradient than {FAST} {where(smaller, facts.gap)}."
    return f"These instructions do not decide whether {FAST} gives a larger gradient than {SLOW}, as the paper reports."


def _largest_steps(steps: Sequence[tuple[str, Sequence[Cell]]]) -> str:
    """ "its largest step is ..." or "its largest steps are ... and ...": the two largest steps (by their
    medians) among those that most cells decide larger; "" where none is (a step decided in few cells
    is left to the split's own figure)."""
    carried = []
    for words, step_cells in steps:
        larger, m = _share(step_cells, Outcome.LARGER)
        if m and 2 * len(larger) > m:
            carried.append((float(np.median([c.value for c in larger])), words))
    named = [words for _, words in sorted(carried, reverse=True)[:2]]
    if not named:
        return ""
    return f"its largest {'steps are' if len(named) > 1 else 'step is'} {voice.listed(named)}"


def _summed_reverses(facts: Facts) -> bool:
    """Whether under a loss summed over tokens slow thinking's gradient is the larger in every cell."""
    return bool(facts.summed) and all(c.value < 0 for c in facts.summed)


def _averaging_explains(facts: Facts) -> bool:
    """Whether the gap is fast thinking's wherever it is decided, and the summed loss reverses it:
    then it holds only because the loss averages over tokens (``reproduces`` says so, and
    ``comes_from`` goes on from there)."""
    decided = [c.outcome for c in facts.gap if c.outcome in (Outcome.LARGER, Outcome.SMALLER)]
    return bool(decided) and set(decided) == {Outcome.LARGER} and _summed_reverses(facts)


def comes_from(facts: Facts, *, steps: bool = True) -> str:
    """What the gap comes from, after ``reproduces``: where averaging explains it, how much larger
    slow thinking's gradient is summed over tokens; the largest steps of the split
    (``_largest_steps``) where they carry it (``steps``: named at all)."""
    largest = _largest_steps(facts.steps) if steps else ""
    sums = [c.value for c in facts.summed]
    if _averaging_explains(facts):
        reversed_ = f"Summed, slow thinking's is {times(sums, inverse=True)} larger"  # the loss, after "averages"
        return reversed_ + (f"; {largest}." if largest else ".")
    if _summed_reverses(facts):
        summed = f"summed over tokens, slow thinking's gradient is {times(sums, inverse=True)} larger"
    elif sums and all(v > 0 for v in sums):
        summed = f"summed over tokens, fast thinking's is still {times(sums)} larger"
    else:
        summed = "summed over tokens, either gradient may be the larger" if sums else ""
    gap_larger = any(c.outcome is Outcome.LARGER for c in facts.gap)
    text = "; ".join(p for p in (largest if largest and gap_larger else "", summed) if p)
    return text[:1].upper() + text[1:] + "." if text else ""


def opening(facts: Facts, *, steps: bool = True) -> str:
    """The first sentence: what reproduces (``reproduces``) and what it comes from (``comes_from``),
    the second after a colon where it says why the first holds, else after a semicolon."""
    first, then = reproduces(facts), comes_from(facts, steps=steps)
    if not (first and then):
        return first or then
    joint = ": " if _averaging_explains(facts) else "; "
    return first[:-1] + joint + then[:1].lower() + then[1:]


def _every(chosen: Sequence[Cell], every: Sequence[Cell]) -> str:
    """ "for every model and family" where ``chosen`` are all of several cells, else ``where``."""
    return "for every model and family" if len(chosen) == len(every) > 1 else where(chosen, every)


# The paper's two claims on the layers, as the layer sentence names them.
EARLY_CLAIM = "a larger gap in early layers"
ROUGHER_CLAIM = "fast thinking's larger variation across layers"


def _claim_verdict(claim: str, claim_cells: Sequence[Cell], *, reversible: bool, against_said: bool = True) -> str:
    """One layer claim with its verdict: where it reproduces (its cells decided on the paper's side),
    else "in none", and where it is decided against ("reverses" where ``reversible``: a cell decided
    the other way is the reverse; else "fails"); where it reproduces nowhere but is decided against
    somewhere, that and "not resolved elsewhere"; "is not resolved" where no cell is decided."""
    holds, against = _share(claim_cells, Outcome.LARGER)[0], _share(claim_cells, Outcome.SMALLER)[0]
    if not (holds or against):
        return f"{claim} is not resolved"
    verb = "reverses" if reversible else "fails"
    if against and against_said and not holds:  # where it is not decided against, it is not resolved
        said = where(against, claim_cells)
        others = len(claim_cells) - len(against)  # "in 2 of 4 ...": the rest by their count, else "elsewhere"
        rest = ""
        if others:
            rest = f", not resolved in the other {others}" if said.startswith("in ") else ", not resolved elsewhere"
        return f"{claim} {verb} {_every(against, claim_cells) if not others else said}{rest}"
    text = f"{claim} reproduces {_every(holds, claim_cells) if holds else 'in none'}"
    if against and against_said:
        text += f" and {verb} {where(against, claim_cells)}"
    return text


def layers(facts: Facts, *, paper: bool = True, against: bool = True) -> str:
    """The paper's claims on the layers, each with its verdict (``_claim_verdict``): a larger gap in
    early layers, and fast thinking's larger variation across layers. Averaging leaves both as they
    are, since it scales every layer alike. ``paper``: led by "Of the paper's layer claims";
    ``against``: where a claim is decided against, said."""
    claims = [(EARLY_CLAIM, facts.early, True), (ROUGHER_CLAIM, facts.rougher, False)]
    claims = [(claim, claim_cells, reversible) for claim, claim_cells, reversible in claims if claim_cells]
    if not claims:
        return ""
    said = [
        _claim_verdict(claim, claim_cells, reversible=reversible, against_said=against)
        for claim, claim_cells, reversible in claims
    ]
    reproduced = {bool(_share(claim_cells, Outcome.LARGER)[0]) for _, claim_cells, _ in claims}
    if (
        len(said) == 2
        and all(" reproduces " in s for s in said)
        and not any(w in t for t in said for w in (" reverses ", " fails "))
    ):  # the verb once
        said[1] = said[1].replace(" reproduces ", " ", 1)
    text = (", but " if len(reproduced) > 1 else ", and ").join(said)  # "but" where one reproduces, one not
    text = f"Of the paper's layer claims, {text}" if paper else text[:1].upper() + text[1:]
    return text + "."


# The reasoning step's quantity in a reader's words: the answer's tokens scored alone.
ANSWERS = "the gradient of the answer's own tokens"
# The equal-loss value in a reader's words: the answer's loss is how unpredictable the model finds it.
ADJUSTED = "adjusted for the answer's predictability"
# The reasoning step's tokens as the figure's legend names them: fast thinking's answer and slow
# thinking's, each after the same phrase, scored alone.
ANSWER_ALONE = "the answer's tokens alone"
# Where the gap is averaging's and the reasoning does not shrink the answer's own gradient, what that
# says of the gap (the paper reads slow thinking's smaller gradient as the reasoning's doing).
NOT_REASONING = "The reasoning is not shown to cause the gap"


def _settled(cell: Cell) -> bool:
    """Whether a cell's direction (or its sameness) is decided: datasets that disagree settle nothing."""
    return cell.outcome in (Outcome.LARGER, Outcome.SMALLER, Outcome.SAME)


def reasoning(
    facts: Facts,
    *,
    unresolved: bool = True,
    beyond: bool = True,
    adjusted: bool = True,
    enlarges: bool = True,
    why: bool = True,
) -> str:
    """What the reasoning before the answer does to the answer's own gradient (scored on the answer's
    tokens alone): where it reliably shrinks or enlarges it, and, adjusted for the answer's
    predictability (its value at equal answer loss), where it is smaller, larger or about the same
    after reasoning (``_at_equal_loss``; ``adjusted``: said at all); where no adjusted cell is decided
    and nothing shrinks it, one clause says so ("even adjusted ..."). Where the gap holds only because
    of averaging and nothing shrinks the answer's gradient, the sentence first says what that means for
    the gap (``why``: ``NOT_REASONING``);
    else it is led by "Beyond the paper" (``beyond``), since this is the study's own question, not one
    of the paper's claims. ``enlarges``: where it enlarges the answer's gradient, said."""
    if not facts.reasoning:
        return ""
    shrinks = _share(facts.reasoning, Outcome.LARGER)[0]
    grows = _share(facts.reasoning, Outcome.SMALLER)[0]
    subject = f"{'Beyond the paper, a' if beyond else 'A'} chain of thought before the answer"
    averaging = not shrinks and _averaging_explains(facts)
    if averaging:  # said from the figure's bars: which side is larger on the answer's tokens alone
        side = "fast thinking's gradient is never reliably larger" if grows else "neither gradient is reliably larger"
        scored = f"scored on {ANSWER_ALONE}, {side}"
        text = f"{NOT_REASONING}: {scored}" if why else scored[:1].upper() + scored[1:]
    elif len(shrinks) == len(facts.reasoning):
        text = f"{subject} shrinks {ANSWERS} {where(shrinks, facts.reasoning)}, as the paper's reading predicts"
    elif shrinks:
        text = f"{subject} shrinks {ANSWERS} {where(shrinks, facts.reasoning)} only"
    else:
        text = f"{subject} never reliably shrinks {ANSWERS}"
    equal_loss = facts.equal_loss if adjusted else ()
    never = equal_loss and not shrinks and not any(_settled(c) for c in equal_loss)
    if never:
        text += f", even {ADJUSTED}"
    if grows and enlarges:
        text += (
            f"; slow thinking's is the larger {where(grows, facts.reasoning)}"
            if averaging
            else (f", and enlarges it {where(grows, facts.reasoning)}")
        )
    return text + ("" if never else _at_equal_loss(equal_loss, unresolved=unresolved)) + "."


def _at_equal_loss(every: Sequence[Cell], *, unresolved: bool = True) -> str:
    """ "; adjusted for the answer's predictability, it is larger after reasoning for Gemma 3 270M in
    both families and not resolved for SmolLM2-135M-Instruct in both families" ("" without such
    cells; ``unresolved``: the cells left unresolved named too)."""
    if not every:
        return ""
    said = [
        f"{state} {where(group, every)}"
        for state, outcome in (
            ("smaller after reasoning", Outcome.LARGER),
            ("larger after reasoning", Outcome.SMALLER),
            ("about the same", Outcome.SAME),
        )
        if (group := _share(every, outcome)[0])
    ]
    if not said:
        return f"; {ADJUSTED}, this is not resolved"
    if unresolved and (unsettled := [c for c in every if not _settled(c)]):
        named = where(unsettled, every)  # a model or a cell by name, else "elsewhere"
        said.append(f"not resolved {named if named.startswith('for ') else 'elsewhere'}")
    return f"; {ADJUSTED}, it is " + voice.listed(said)


MAX_WORDS = 90  # the abstract's length at most


# What the abstract leaves to the sections that follow, one more at a time, while it runs past
# MAX_WORDS: the split's largest steps, the cells the adjusted answer gradient leaves unresolved,
# what the adjusted answer gradient shows (the split's chapter has it), the layer sentence's lead,
# why the reasoning sentence matters, where a layer claim is decided against, the reasoning sentence's lead, and where the answer's
# gradient grows (the claims table below says every verdict).
LEFT_OUT = ("steps", "unresolved", "adjusted", "paper", "why", "against", "beyond", "enlarges")


def sentences(facts: Facts) -> list[str]:
    """The abstract's sentences: what reproduces and what it comes from, what the reasoning does to
    the answer's own gradient (the gap's other possible source), the layers; with the fewest of
    ``LEFT_OUT`` left out that keeps it within ``MAX_WORDS``."""
    for n in range(len(LEFT_OUT) + 1):
        kept = {name: name not in LEFT_OUT[:n] for name in LEFT_OUT}
        parts = (
            opening(facts, steps=kept["steps"]),
            reasoning(
                facts,
                unresolved=kept["unresolved"],
                adjusted=kept["adjusted"],
                beyond=kept["beyond"],
                enlarges=kept["enlarges"],
                why=kept["why"],
            ),
            layers(facts, paper=kept["paper"], against=kept["against"]),
        )
        said = [s for s in parts if s]
        if words(" ".join(said)) <= MAX_WORDS:
            break
    return said


def words(text: str) -> int:
    """How many words a reader reads (numbers and ranges count as words)."""
    return len(text.split())


# --------------------------------------------------------------------------- the figure


PALE = 0.3  # the opacity of the fill of a bar whose cell is not decided
# Under a panel's title where it has a pale bar: what the whiskers and the pale bars mean.
PALE_SAYS = "whiskers: 95% intervals; pale bars: not resolved by these instructions"
# What the number at the end of a bar says besides its ratio, where the bar settles nothing.
BAR_NOTE = {Outcome.DISAGREE: "datasets disagree", Outcome.TOO_FEW: "too few instructions"}
# Each panel's title and what either end of its axis means.
PANELS = (
    ("Fast vs slow thinking's gradient (times larger)", ("slow's larger", "fast's larger")),
    ("Fast vs slow thinking's gap: early over late layers (times larger)", ("larger late", "larger early")),
)


BAR_INCHES = 0.14  # a bar's height in the figure's panels
ROW_INCHES = 0.06  # the space between rows
MARGIN_INCHES = 1.0  # a panel's verdict, title, legend, ticks and axis ends


def figure(facts: Facts, *, note: str | None = None) -> Figure | None:
    """Stacked panels of bars with their numbers, one row per model and family: fast over slow
    thinking's gradient under the mean loss, under the summed loss and on the answer's tokens alone
    (what the reasoning does to them; log scale); below it the paper's layer claims, that gap in
    early over late layers and the variation claim's comparisons (a panel without a cell is left
    out); None without a cell to draw."""
    models = list(
        dict.fromkeys([*(c.model for c in (*facts.gap, *facts.early)), *(t.model for t in facts.comparisons)])
    )
    if not models:
        return None
    every_series: list[list[tuple[tuple[Cell, ...], str, str]]] = [
        [
            (facts.gap, "mean over tokens (the paper's)", "#4c72b0"),
            (facts.summed, "sum over tokens", "#dd8452"),
            (facts.reasoning, ANSWER_ALONE, "#8172b2"),
        ],
        [(facts.early, "either loss", "#55a868")],
    ]
    series = [[s for s in bars if s[0]] for bars in every_series]  # a quantity the page lacks: no bar
    panels = [(title, ends, bars) for (title, ends), bars in zip(PANELS, series) if bars]
    # each panel's axes: BAR_INCHES a bar and ROW_INCHES a row (two families a model); its titles,
    # legend and ticks: MARGIN_INCHES
    heights = [(BAR_INCHES * len(bars) + ROW_INCHES) * len(models) * 2 for _, _, bars in panels]
    heights += [(BAR_INCHES + ROW_INCHES) * len(models) * 2] if facts.comparisons else []
    size = (6.8, 0.3 + sum(heights) + MARGIN_INCHES * len(heights))
    fig, axes = plt.subplots(len(heights), 1, figsize=size, height_ratios=heights)
    axes = np.atleast_1d(axes)
    if facts.comparisons:
        _tally_panel(axes[-1], models, facts.comparisons, facts.rougher)
        verdict = _claim_verdict(ROUGHER_CLAIM, facts.rougher, reversible=False) if facts.rougher else ""
        _verdict_line(axes[-1], verdict[:1].upper() + verdict[1:], above=22 + 11 * (TALLY_TITLE.count("\n") + 1))
    said_pale = False
    for ax, (title, ends, bars), verdict in zip(axes, panels, _panel_verdicts(facts)):
        _bars(ax, models, bars)
        pale = any(_bar_note(c.outcome) for group, _, _ in bars for c in group) and not said_pale
        _ratio_panel(ax, title + ("\n" + PALE_SAYS if pale else ""), ends, verdict=verdict, legend=len(bars) > 1)
        said_pale = said_pale or pale  # what pale bars mean, once: on the first panel with one
    bottom = plots.add_note(fig, note)
    # each panel keeps the room its own title and verdict need (a tight layout gives every gap the largest)
    fig.set_layout_engine(ConstrainedLayoutEngine(h_pad=0.1, rect=(0, bottom, 1, 1 - bottom)))
    return fig


def _ratio_panel(ax, title: str, ends: tuple[str, str], *, verdict: str, legend: bool) -> None:
    """A panel of ratio bars dressed: its verdict over its title, what either end of its log axis
    means, x1 marked, ticks as "x10" either way, and its series' legend (``legend``: more than one)."""
    pad = 28 if legend else 6  # room for the legend's one row
    ax.set_title(title, fontsize=9, pad=pad)
    _verdict_line(ax, verdict, above=pad + 11 * (title.count("\n") + 1))
    for x, side, words in ((0.0, "left", f"← {ends[0]}"), (1.0, "right", f"{ends[1]} →")):
        ax.annotate(
            words,
            (x, 0),
            xycoords="axes fraction",
            xytext=(0, -18),
            textcoords="offset points",
            ha=side,
            va="top",
            fontsize=8,
            style="italic",
        )
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    ax.xaxis.set_major_locator(FixedLocator(_ticks(low, high)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"x{round(max(v, 1 / v), 6):g}"))  # either way
    ax.tick_params(labelsize=8)
    if legend:  # one series: the title and the caption say what it is
        ax.legend(handles=_legend(ax), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)


def _panel_verdicts(facts: Facts) -> list[str]:
    """What each ratio panel shows, in words, as the abstract says it: where fast and where slow
    thinking's gradient is larger under each loss; where the early-layer claim reproduces
    (``_claim_verdict``)."""
    said = []
    if facts.gap or facts.summed or facts.reasoning:
        sides = []
        for name, group in (
            ("under the mean loss", facts.gap),
            ("summed", facts.summed),
            (f"on {ANSWER_ALONE}", facts.reasoning),
        ):
            fast, slow = _share(group, Outcome.LARGER)[0], _share(group, Outcome.SMALLER)[0]
            named = [
                f"{who}'s larger{'' if len(cells_) == len(group) else ' ' + where(cells_, group)}"
                for who, cells_ in (("fast", fast), ("slow", slow))
                if cells_
            ]
            sides.append(f"{name}, {' and '.join(named) if named else 'not resolved'}" if group else "")
        text = "; ".join(s for s in sides if s)
        said.append(text[:1].upper() + text[1:])
    if facts.early:
        early = _claim_verdict(EARLY_CLAIM, facts.early, reversible=True)
        said.append(early[:1].upper() + early[1:])
    return said


def _verdict_line(ax, text: str, *, above: float) -> None:
    """A panel's verdict in bold, ``above`` points over the top of its axes (over its title), wrapped
    to the panel's width."""
    if text:
        ax.annotate(
            "\n".join(textwrap.wrap(text, 75)),
            (0.5, 1.0),
            xycoords="axes fraction",
            xytext=(0, above + 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
            fontweight="bold",
        )


# The last panel: the variation claim's comparisons per cell, by how each is decided.
TALLY_TITLE = (
    "Does the faster setting of a pair vary more across layers? One comparison per projection\n"
    "(Q, K, V, O) and pair of settings: no vs short, short vs detailed chain of thought"
)
# A row's verdict, printed at its end, by its cell's outcome (``VERDICT_OUTCOME``).
TALLY_VERDICT = {Outcome.LARGER: "holds", Outcome.SMALLER: "fails", Outcome.DISAGREE: "datasets disagree"}
TALLY_SIDES = (
    ("held", "faster varies more (the paper)", "#55a868"),
    ("against", "faster varies less", "#c44e52"),
    ("open", "not resolved", "#d0d0d0"),
)


def _tally_panel(ax, models: Sequence[str], comparisons: Sequence[Tally], verdicts: Sequence[Cell]) -> None:
    """One stacked bar per model and family: its comparisons decided on the claim's side, against
    it, and neither, each with its count, and the row's verdict at its end (``verdicts``: the claim's
    cells); the claim holds in a row only where all are on its side."""
    rows = [t for m in models for t in comparisons if t.model == m]
    ys = range(len(rows))
    left = np.zeros(len(rows))
    for attribute, label, colour in TALLY_SIDES:
        counts = np.array([getattr(t, attribute) for t in rows], dtype=float)
        ax.barh(ys, counts, left=left, height=0.6, color=colour, label=label)
        for y, x, n in zip(ys, left, counts):
            if n:
                ax.text(x + n / 2, y, f"{n:g}", ha="center", va="center", fontsize=8)
        left += counts
    verdict = {(c.model, c.scope): TALLY_VERDICT.get(c.outcome, "not resolved") for c in verdicts}
    for y, t, end in zip(ys, rows, left):
        said = verdict.get((t.model, t.scope), "")
        ax.text(end + 0.15, y, said, va="center", ha="left", fontsize=8, style="italic")
    widest = max(left.max(), 1)
    ax.set_xlim(0, widest * 1.45)  # room for the verdicts
    ax.set_xticks(range(int(widest) + 1))
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_xlabel(
        "comparisons; a row holds where all are green and fails where one is red",
        fontsize=8,
    )
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{_short(t.model)}, {vocabulary.scope_label(t.scope).split()[0]}" for t in rows], fontsize=8)
    ax.invert_yaxis()
    ax.tick_params(labelsize=8)
    ax.set_title(TALLY_TITLE, fontsize=9, pad=22)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)


def _ticks(low: float, high: float) -> list[float]:
    """Ticks at x1, x3, x10, ... either side of x1 (x1, x10, x100, ... on a wide axis), so that a
    tick left of x1 reads as how many times larger the left side is, as a round number."""
    steps = (1.0,) if high / low > 300 else (1.0, 3.0)
    right = [m * 10.0**k for k in range(0, 6) for m in steps]
    return sorted(t for t in {1.0, *right, *(1 / r for r in right)} if low <= t <= high)


def _bar_note(outcome: Outcome) -> str:
    """What a bar's number says besides its ratio: nothing where its cell is settled, else why not."""
    if outcome in (Outcome.LARGER, Outcome.SMALLER, Outcome.SAME):
        return ""
    return BAR_NOTE.get(outcome, "not resolved")


def _legend(ax) -> list[Patch]:
    """A panel's legend: each series' colour (a pale bar says in words why it settles nothing)."""
    bars = [c for c in ax.containers if isinstance(c, BarContainer) and c]
    return [Patch(facecolor=c.patches[0].get_facecolor()[:3], label=c.get_label()) for c in bars]


def _short(model: str) -> str:
    """A model's name short enough for a bar's label: the registry's description's first words."""
    return _described(model).split(" (")[0]


def _bars(ax, models: Sequence[str], series) -> None:
    """Horizontal bars from x1, one group per model and scope, one bar per series, its ratio printed
    at its end."""
    rows = [
        (m, s) for m in models for s in dict.fromkeys(c.scope for group, _, _ in series for c in group if c.model == m)
    ]
    height = 0.8 / max(len(series), 1)
    for k, (group, label, colour) in enumerate(series):
        by_row = {(c.model, c.scope): c for c in group}
        ys, values, intervals, outcomes = [], [], [], []
        for i, row in enumerate(rows):
            cell = by_row.get(row)
            if cell is not None:
                ys.append(i + (k - (len(series) - 1) / 2) * height)
                values.append(math.exp(cell.value))
                intervals.append((math.exp(cell.low), math.exp(cell.high)))  # nan where none was computed
                outcomes.append(cell.outcome)
        widths = [v - 1.0 for v in values]  # from x1, no difference, to the ratio, either way
        bars = ax.barh(ys, widths, left=1.0, height=height * 0.9, color=colour, label=label)
        for bar, y, v, (low, high), outcome in zip(bars, ys, values, intervals, outcomes):
            note = _bar_note(outcome)
            if note:  # pale inside, outlined in its series' colour
                bar.set_facecolor(to_rgba(colour, PALE))
                bar.set_edgecolor(colour)
                bar.set_linewidth(0.8)
            if math.isfinite(low) and math.isfinite(high):
                ax.errorbar(v, y, xerr=[[v - low], [high - v]], fmt="none", ecolor="k", elinewidth=0.8, capsize=2)
            said = f"x{voice.three(max(v, 1 / v))}"  # how many times larger, on the side the bar points to
            said += f" ({note})" if note else ""
            text, side = (f" {said}", "left") if v >= 1 else (f"{said} ", "right")
            if math.isfinite(low) and math.isfinite(high):  # past a short whisker, over a long one
                v = min(max(v, high), 2.0 * v) if v >= 1 else max(min(v, low), v / 2.0)
            box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5}  # over its whisker
            ax.text(v, y, text, va="center", ha=side, fontsize=8 if len(series) < 3 else 7, bbox=box)
    widest = max(math.exp(abs(c.value)) for group, _, _ in series for c in group)  # a wide whisker is cut
    ax.set_xlim(1 / (widest * 6), widest * 6)  # x1 in the middle, room for the printed ratios
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{_short(m)}, {vocabulary.scope_label(s).split()[0]}" for m, s in rows], fontsize=8)
    ax.invert_yaxis()


def caption(facts: Facts) -> str:
    """The figure's visible caption: every term it uses, defined (the lower panel's only where it is
    drawn); fast and slow thinking are defined by the scope line above it (``DEFINED``)."""
    top = (
        " Top: fast (None CoT) against slow thinking (Detailed CoT) under the paper's loss, a mean over the "
        "response's tokens, and under the summed loss, their sum."
    )
    alone = (
        " The answer's tokens alone: the bare answer and the answer after the chain of thought, each after "
        '"The final answer is " and scored on the answer\'s tokens only, so that only the reasoning before it differs.'
    )
    below = (
        " Below: that gap in the early layers (about the first quarter) over the late layers (about the last "
        "quarter), the paper's claim that the gap is larger early; averaging scales every layer's gradient "
        "alike, so it is the same under either loss."
    )
    last = (
        " Last: the paper's claim that the faster the thinking, the more the gradient varies from layer to layer, "
        "compared for each projection and each pair of adjacent settings (no, short and detailed chain of thought) "
        "by how much its log curve changes from one layer to the next beyond noise; it holds in a row where every "
        "comparison is on its side (green) and fails where one is against it beyond chance over all of them "
        "(red, Bonferroni). A row counts fewer comparisons where no chain and the short one are "
        "compared on their mean curves as a whole (where the bare answer's spread changes across layers)."
    )
    return (
        "**The figure.** *Gradient*: the nuclear norm of the gradient of the loss with respect to every attention "
        "matrix, averaged over layers and matrices, as a geometric mean over instructions."
        + (top if facts.gap or facts.summed else "")
        + (alone if facts.reasoning else "")
        + (below if facts.early else "")
        + (last if facts.comparisons else "")
        + " Each bar is a model on a family of datasets (or on one dataset); it points to the larger side, its "
        "number says how many times larger (log scale) and its whisker is the 95% interval (instructions "
        "resampled within each dataset). A pale bar is *not resolved*: its interval does not settle the side, or, "
        "where it says *datasets disagree*, the family's datasets are decided in opposite directions."
        + _small_sample(facts)
    )


def _small_sample(facts: Facts) -> str:
    """What so few instructions can show, where a run has fewer than the paper's."""
    n = facts.instructions
    if not n or n >= PAPER_SAMPLES:
        return ""
    return (
        f" With {n} instructions per dataset only large differences are resolved: a bar not resolved is no "
        "evidence that there is no difference."
    )
