"""Reading the blocks a section returns (``analysis.report.blocks``), as the tests do: what a reader
reads of them, their tables and their figures, inside folds too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd

from analysis.report.blocks import Block, Figure, Fold, Markdown, PageEnd, Table


def walk(blocks: Iterable[Block]) -> Iterator[Block]:
    """Every block, those inside folds included, in reading order."""
    for block in blocks:
        yield block
        if isinstance(block, Fold):
            yield from walk(block.blocks)


def text_of(blocks: Iterable[Block], *, folded: bool = True) -> str:
    """The Markdown and page-end text of ``blocks`` (inside folds too, unless ``folded`` is False), one
    paragraph each: what a reader reads of them."""
    chosen = walk(blocks) if folded else iter(blocks)
    return "\n\n".join(b.text for b in chosen if isinstance(b, (Markdown, PageEnd)) and b.text)


def tables_of(blocks: Iterable[Block]) -> list[pd.DataFrame]:
    """The tables with rows among ``blocks`` (inside folds too)."""
    return [b.table for b in walk(blocks) if isinstance(b, Table) and b.table is not None and not b.table.empty]


def figures_of(blocks: Iterable[Block]) -> list[Figure]:
    """The figure blocks with a figure among ``blocks`` (inside folds too)."""
    return [b for b in walk(blocks) if isinstance(b, Figure) and b.figure is not None]
