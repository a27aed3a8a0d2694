"""The one renderer of the book's pages: the blocks a section returns (``analysis.report.blocks``) as a
notebook's outputs, tables sized to the page, figures inlined, folds as ``<details>``."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

import pandas as pd
from matplotlib.figure import Figure

from analysis.report import blocks

# Columns left out of a displayed table when they hold one value, which is named above it instead.
CONSTANT_COLUMNS = ("responses", "n_samples", "n", "n (correct / irrelevant)", "n_folds", "imported")
# A displayed table's cells: small type, and wrapped where the table would be wider than the column.
CELL = "font-size: 0.8em; padding: 0.15em 0.4em; white-space: normal;"
# An interval "[low, high]" in a cell: it stays on one line where a narrow column wraps the cell.
INTERVAL = re.compile(r"\[([^\[\],]*), ([^\[\]]*)\]")
SHORT_CELL = 8  # a cell of text this short, without an interval, stays on one line ("None CoT", "1 x 5")
# A cell of one word longer than this (a file path) breaks anywhere where its column needs it, in a
# table that would otherwise be wider than the column (class LONG_WORD; the book's CSS for itables).
LONG_WORD_CHARS = 24
LONG_WORD = "long-word"
LONG_WORD_CELL = "white-space: normal; overflow-wrap: anywhere; min-width: 12em;"  # even in the first column


# A table longer than this is shown as an interactive table (sortable, searchable, paged) where
# itables is installed, with its JavaScript embedded in the page so that it works offline.
INTERACTIVE_ROWS = 25
_itables_ready = False


def interactive_html(table: pd.DataFrame) -> str | None:
    """The table as an offline itables DataTable (HTML), or None when itables is not installed; a
    column holding a long word (a file path) has the class ``LONG_WORD``, which may break it.

    The first call in a kernel also displays itables' offline initialisation (its JavaScript
    bundle), which the tables of the page then use.
    """
    global _itables_ready
    try:
        import itables
    except ImportError:
        return None
    if not _itables_ready:
        itables.init_notebook_mode(all_interactive=False, connected=False)
        _itables_ready = True
    long = [i for i, c in enumerate(table.columns) if table[c].map(long_word).any()]
    # autoWidth off: DataTables measures its columns when it starts, inside a fold still closed,
    # and those widths hold the table wider than the page; the browser's own layout fits it.
    return itables.to_html_datatable(
        table,
        connected=False,
        showIndex=False,
        classes="display compact",
        maxBytes=0,
        allow_html=False,
        autoWidth=False,
        columnDefs=[{"targets": long, "className": LONG_WORD}] if long else [],
    )


def markdown_html(text: str) -> str:
    """Generated Markdown as HTML, for a block inside a fold (CommonMark, as the book renders it)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(text).strip()


# The metadata of the output after which an executed page has nothing more to show.
PAGE_ENDS = "analysis-page-ends"


def figure_html(fig: Figure, alt: str) -> str:
    """A figure as an HTML image with alternative text, the PNG inlined."""
    import base64
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" style="max-width: 100%;">'


def table_outputs(block: blocks.Table) -> list[tuple[str, str]]:
    """A table block as its outputs, ("markdown" | "html", text) each: one table per value of its
    ``by`` column under a bold line naming it, single-valued bookkeeping columns moved into that line;
    a line saying why where it has no rows."""
    table = block.table
    if table is None or table.empty:
        return [("markdown", block.empty)] if block.empty else []
    by = block.by
    groups = list(table.groupby(by, sort=False)) if by in table.columns else [(None, table)]
    out = []
    for key, part in groups:
        if key is not None:
            part = part.drop(columns=[by])
        constant = [c for c in CONSTANT_COLUMNS if c in part.columns and len(part) > 1 and part[c].nunique() == 1]
        notes = [f"{c.replace('_', ' ')}: {part[c].iloc[0]}" for c in constant]
        if key is not None or notes:
            out.append(
                ("markdown", (f"**{key}**" if key is not None else "") + (f" ({'; '.join(notes)})" if notes else ""))
            )
        shown = part.drop(columns=constant)
        interactive = interactive_html(shown.map(unbroken_intervals)) if len(shown) > INTERACTIVE_ROWS else None
        out.append(("html", interactive or styled_table(shown).to_html()))
    return out


def outputs(block: blocks.Block) -> list[tuple[str, str]]:
    """One block as the outputs a notebook displays, ("markdown" | "html" | "end", text) each; a
    figure is closed once drawn."""
    import matplotlib.pyplot as plt

    if isinstance(block, blocks.Markdown):
        return [("markdown", block.text)] if block.text else []
    if isinstance(block, blocks.Html):
        return [("html", block.html)] if block.html else []
    if isinstance(block, blocks.PageEnd):
        return [("end", block.text)]
    if isinstance(block, blocks.Table):
        return table_outputs(block)
    if isinstance(block, blocks.Figure):
        if block.figure is None:
            return [("markdown", block.empty)] if block.empty else []
        image = figure_html(block.figure, block.alt)
        plt.close(block.figure)
        title = [("markdown", f"**{block.title}**")] if block.title else []
        return [*title, ("html", image)]
    inner = [html_of(kind, text) for child in block.blocks for kind, text in outputs(child)]
    if not inner:
        return []
    return [("html", f"<details><summary>{html.escape(block.summary)}</summary>\n" + "\n".join(inner) + "\n</details>")]


def html_of(kind: str, text: str) -> str:
    """An output as HTML, for a fold."""
    return markdown_html(text) if kind in ("markdown", "end") else text


def show(shown: blocks.Block | Iterable[blocks.Block] | None) -> None:
    """Display blocks in a notebook: the one renderer of every page."""
    from IPython.display import HTML, Markdown, display

    if shown is None:
        return
    for block in [shown] if isinstance(shown, blocks.BLOCK_TYPES) else shown:
        for kind, text in outputs(block):
            if kind == "end":
                display(Markdown(text), metadata={PAGE_ENDS: True})
            else:
                display(Markdown(text) if kind == "markdown" else HTML(text))


def column_parts(table: pd.DataFrame, *, keys: Sequence[str], first: Sequence[str]) -> list[pd.DataFrame]:
    """A table too wide for the page as two: the columns ``keys`` that name a row with the columns
    ``first``, then ``keys`` with the others (every column shown once, beside its row's keys)."""
    named = [c for c in table.columns if c in keys]
    front = [c for c in table.columns if c in first and c not in keys]
    rest = [c for c in table.columns if c not in named and c not in front]
    return [table[named + front], table[named + rest]]


def unbroken_intervals(value):
    """A cell with each interval "[low, high]" kept on one line (a no-break space after its comma),
    so that a wrapped cell breaks between the estimate and its interval, not inside the interval."""
    return INTERVAL.sub("[\\1,\u00a0\\2]", value) if isinstance(value, str) else value


def short(value) -> bool:
    """Whether a cell is a short text without an interval ("None CoT"), kept on one line so
    that the long cells and the headings take the wrapping."""
    return isinstance(value, str) and "[" not in value and len(value) <= SHORT_CELL


def long_word(value) -> bool:
    """Whether a cell is one word too long to keep whole where its column is narrow (a file path)."""
    return isinstance(value, str) and " " not in value and len(value) > LONG_WORD_CHARS


def _cell_class(value) -> str:
    return "short" if short(value) else LONG_WORD if long_word(value) else ""


def _short_names(table: pd.DataFrame) -> bool:
    """Whether a table's first column holds short names (kept on one line) rather than sentences (a
    claim in words), which wrap like any long cell."""
    if table.empty:
        return True
    return all(len(str(v)) <= 3 * SHORT_CELL for v in table.iloc[:, 0])


def styled_table(table: pd.DataFrame):
    """A table as the book shows it: no index, compact cells, text escaped for HTML (``<=`` stays text).
    Long cells and headings wrap where the table would otherwise be wider than the page's column
    (at spaces, never inside an interval, a short cell or a first column of short names; a
    word longer than its column, such as a file path, anywhere): every table fits the column
    without scrolling sideways."""
    table = table.reset_index(drop=True)
    styled = (
        table.map(unbroken_intervals)
        .style.format(escape="html")
        .hide(axis="index")
        .set_td_classes(table.map(_cell_class))
        .set_table_styles(
            [
                {"selector": "td", "props": f"{CELL} vertical-align: top;"},
                # a row's name (where every name is short), a short text
                {
                    "selector": "td.col0, td.short" if _short_names(table) else "td.short",
                    "props": "white-space: nowrap;",
                },
                {"selector": f"td.{LONG_WORD}", "props": LONG_WORD_CELL},
                {"selector": "th", "props": f"{CELL} vertical-align: bottom;"},
            ]
        )
    )
    return styled.set_table_attributes('style="margin-left: 0"')
