"""The one voice of the book: how a verdict, a size, an interval, a scope, a reason and a count are
written. Every page, the verdict matrix's cells and hover texts, the summary and the chapters'
paragraphs call these functions, so that a number reads the same wherever it is shown.

One number format: a ratio near 1 (between 0.5 and 2) as a percentage change ("+13%"), any other
as a multiple ("x10.4"), an interval in brackets in the same style as its estimate ("x4.78 [x3.85,
x5.95]"); a share as a percentage; any other number with three significant digits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from analysis.core import vocabulary
from analysis.core.formatting import fmt
from analysis.findings.rules import Finding, NotApplicable, Outcome, Part, Unit, Verdict

LARGEST_SIZE_SHOWN = 1000  # instructions beyond which "would decide" reads "over 1000"
PAPER_QUANTITY = "paper's mean nuclear norm: "  # a part on the paper's quantity is named with this first
OPPOSITE_SIGN = " (opposite sign to the geometric mean)"
POOLED = " (pooled)"
DISAGREEING = "its datasets disagree"  # before each dataset's size where a family's datasets are decided apart


def plural(n: int, word: str, words: str | None = None) -> str:
    """ "1 cell", "3 cells" (``words``: an irregular plural)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number(n: int) -> str:
    """A count as a reader reads it in a sentence: a word up to ten ("four"), digits beyond."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def three(value: float) -> str:
    """A number at the book's precision: three significant figures (``formatting.fmt``)."""
    return fmt(value)


def listed(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def scope(name: str, pooled: bool) -> str:
    """A finding's scope as the book names it, with "(pooled)" after a family of datasets."""
    return vocabulary.scope_label(name) + (POOLED if pooled and name in vocabulary.FAMILY_DATASETS else "")


def reads_as_times(values: Iterable[float]) -> bool:
    """Whether ratios read as multiples ("x1.13") rather than percentage changes ("+13%"): always, so
    that one statistic is written in one unit everywhere in the book (a margin, a bound, is written
    as the percentage change it allows by asking for it: ``size(..., times=False)``)."""
    return True


def size(value: float, unit: Unit, *, times: bool | None = None) -> str:
    """One number as the book writes it (see the module docstring). ``times``: a ratio as a multiple
    (True) or a percentage change (False) whatever its value, so that the ends of a range read alike."""
    if value is None or not math.isfinite(value):
        return "nan"
    if unit.is_ratio:
        as_times = reads_as_times([value]) if times is None else times
        return f"x{fmt(value)}" if as_times else f"{value - 1:+.0%}"
    if unit is Unit.SHARE:
        return f"{value:.0%}"
    return fmt(value)


def sized(part: Part, *, interval: bool = True, times: bool | None = None) -> str:
    """A part's value as a reader sees it, with its 95% interval where it has one, every number in one
    style (``times``; None: by the part's own ends)."""
    value, low, high = part.shown()
    has_interval = interval and math.isfinite(low) and math.isfinite(high)
    if times is None:
        times = reads_as_times([value, low, high] if has_interval else [value])
    text = size(value, part.unit, times=times)
    if has_interval:
        text += f" [{size(low, part.unit, times=times)}, {size(high, part.unit, times=times)}]"
    return text


def sized_range(parts: Sequence[Part], *, interval: bool) -> str:
    """The size of one part ("x4.1", with "[x2.9, x5.8]" if ``interval``), else of the smallest and
    the largest: "x4.1 to x15", all in one style."""
    ordered = sorted((p for p in parts if math.isfinite(p.value)), key=lambda p: p.value)
    if not ordered:
        return ""
    ends = [v for p in ordered for v in (p.shown() if interval else p.shown()[:1])]
    times = reads_as_times(ends)
    texts = [sized(p, interval=interval, times=times) for p in (ordered[0], ordered[-1])]
    return texts[0] if texts[0] == texts[1] else " to ".join(texts)


def part_name(part: Part) -> str:
    """A part's name as a reader sees it: a part on the paper's quantity with ``PAPER_QUANTITY``
    before its name and, where marked, ``OPPOSITE_SIGN`` after it; a family's part that holds one
    dataset only with that dataset after it ("(aqua only)")."""
    name = part.name if not part.paper else PAPER_QUANTITY + part.name + (OPPOSITE_SIGN if part.opposite else "")
    return name + (f" ({part.datasets[0]} only)" if len(part.per_dataset) == 1 else "")


def dataset_sizes(part: Part, *, interval: bool = False) -> str:
    """A family's part dataset by dataset, every number in one style, each with its own outcome:
    "aqua +33% larger, gsm8k x0.24 smaller" ("" for a dataset's own part)."""
    ends = [v for _, p in part.per_dataset for v in (p.shown() if interval else p.shown()[:1])]
    times = reads_as_times(ends)
    return ", ".join(f"{d} {sized(p, interval=interval, times=times)} {p.outcome}" for d, p in part.per_dataset)


def opposite_ends(part: Part) -> str:
    """The sizes of a family's part whose datasets disagree, at its two ends: the largest of the
    datasets decided larger and the smallest of those decided smaller, one line each ("+33%" above
    "x0.24"), as a matrix cell prints them."""
    decided = [p for _, p in part.per_dataset if p.outcome in (Outcome.LARGER, Outcome.SMALLER)]
    larger = max((p for p in decided if p.outcome is Outcome.LARGER), key=lambda p: p.value, default=None)
    smaller = min((p for p in decided if p.outcome is Outcome.SMALLER), key=lambda p: p.value, default=None)
    ends = [p for p in (larger, smaller) if p is not None]
    times = reads_as_times([p.shown()[0] for p in ends])
    return "\n".join(sized(p, interval=False, times=times) for p in ends)


def part_label(part: Part) -> str:
    """A part's full name as a reader sees it: its group, then its name."""
    return f"{part.group} {part_name(part)}".strip()


def part_text(part: Part) -> str:
    """ "name est [low, high]" in the reader's units ("not computed" without an estimate), and where
    a family's datasets disagree on it, each one's size and outcome."""
    name = part_name(part)
    if part.estimate is None:
        return f"{name}: not computed"
    apart = f" ({DISAGREEING}: {dataset_sizes(part)})" if part.outcome is Outcome.DISAGREE else ""
    return f"{name} {sized(part)}{apart}"


def numbers(finding: Finding) -> str:
    """Each part of a finding with its interval, the parts of a group after one heading, then its
    notes in brackets; where it does not apply, why (``explained``)."""
    if finding.not_applicable is not None:
        return explained(finding.not_applicable)
    groups: dict[str, list[Part]] = {}
    for part in finding.parts:
        groups.setdefault(part.group, []).append(part)
    text = "; ".join(
        (f"{group}: " if group else "") + ", ".join(part_text(p) for p in parts) for group, parts in groups.items()
    )
    notes = "; ".join(n.text for n in finding.notes)
    return f"{text} ({notes})" if notes else text


def explained(why: NotApplicable) -> str:
    """Why a check does not apply, in full: the reason, what shows it, the rest, and the command."""
    pieces = [why.reason + (f" ({'; '.join(part_text(p) for p in why.evidence[:1])})" if why.evidence else "")]
    pieces += [why.detail] if why.detail else []
    text = "; ".join(pieces)
    return text + (f"; add them with `{why.command}`" if why.command else "")


def instructions(size_: float) -> str:
    """A number of instructions that would decide: "about 40", "over 1000", "" where none is known
    (a measured value near its bound makes the size explode, and its exact value means nothing then)."""
    if size_ is None or not math.isfinite(size_):
        return ""
    return f"over {LARGEST_SIZE_SHOWN}" if size_ > LARGEST_SIZE_SHOWN else f"about {int(size_)}"


def instruction_count(size_: float) -> str:
    """The same for a table's cell: "40", "over 1000", ""."""
    if size_ is None or not math.isfinite(size_):
        return ""
    return f"over {LARGEST_SIZE_SHOWN}" if size_ > LARGEST_SIZE_SHOWN else str(int(size_))


def rate(value: float) -> str:
    """An error rate as every page prints it: "2.5%", "10.0%"."""
    return f"{value:.1%}"


def verdict(value: Verdict | str) -> str:
    """A verdict as the book prints it."""
    return str(Verdict(value).value)


def verdict_counts(verdicts: Iterable[Verdict | str]) -> str:
    """ "2 holds, 1 does not hold, 1 where the datasets disagree, ..." in the book's order of verdicts."""
    seen = [Verdict(v) for v in verdicts]
    return ", ".join(
        f"{seen.count(v)} {'where ' if v is Verdict.DISAGREE else ''}{v.value}" for v in Verdict if seen.count(v)
    )
