"""What a page shows, as values: a section returns blocks (Markdown, HTML, a table, a figure, a fold
of other blocks, the page's end), and one renderer (``analysis.report.display.show``) displays them
in a notebook. Tests read the blocks a section returns; nothing is displayed as a side effect."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd
from matplotlib.figure import Figure as MatplotlibFigure


@dataclass(frozen=True)
class Markdown:
    """Generated Markdown (empty: nothing is shown)."""

    text: str


@dataclass(frozen=True)
class Html:
    """Generated HTML, e.g. a figure as inline SVG (empty: nothing is shown)."""

    html: str


@dataclass(frozen=True)
class Table:
    """A table without its index, one per value of ``by`` (a bold line names it), or ``empty`` where
    it has no rows."""

    table: pd.DataFrame | None
    empty: str = "No rows."
    by: str | None = "model"


@dataclass(frozen=True)
class Figure:
    """A figure with its alternative text and a bold title above it, or ``empty`` where there is none."""

    figure: MatplotlibFigure | None
    alt: str
    title: str = ""
    empty: str = ""


@dataclass(frozen=True)
class Fold:
    """Blocks folded under one line that the reader opens when wanted (nothing where they show nothing)."""

    summary: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class PageEnd:
    """The page's last output: the book leaves out every cell after it (``study.book.cut_after_page_end``)."""

    text: str


Block = Markdown | Html | Table | Figure | Fold | PageEnd
BLOCK_TYPES = (Markdown, Html, Table, Figure, Fold, PageEnd)
Blocks = list[Block]


def fold(summary: str, blocks: Iterable[Block]) -> Fold:
    return Fold(summary, tuple(blocks))


def figures(pairs: Iterable[tuple[str, MatplotlibFigure]], *, empty: str = "", alt: str = "") -> Blocks:
    """One figure block per (title, figure), each with its title as alternative text (after ``alt``);
    ``empty`` where there is none."""
    out: Blocks = [
        Figure(fig, f"{alt}{': ' if alt and title else ''}{title}" or "figure", title) for title, fig in pairs
    ]
    return out or ([Markdown(empty)] if empty else [])
