"""Showing a page's results in a notebook: Markdown, tables sized to the page, figures."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import pandas as pd
from matplotlib.figure import Figure

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


_collecting: list[list[str]] = []  # the outputs of the open ``collapsed`` blocks, innermost last


def _inline_html(text: str) -> str:
    """Links, bold, italics and code of one line of generated Markdown, as HTML."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\[([^\]]+)\]\(([^)\s\"]+)\)", r'<a href="\2">\1</a>', text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return re.sub(r"\*(.+?)\*", r"<em>\1</em>", text)


def _markdown_html(text: str) -> str:
    """The few Markdown marks a collapsed block's lines use (links, bold, italics, code, a list of
    ``- `` lines), as HTML."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and all(line.startswith("- ") for line in lines):
        return "<ul>" + "".join(f"<li>{_inline_html(line[2:])}</li>" for line in lines) + "</ul>"
    return "<p>" + _inline_html(text) + "</p>"


def _emit(obj) -> None:
    """Display one output, or keep it (as HTML) for the collapsed block that is open."""
    from IPython.display import HTML, Markdown, display

    if not _collecting:
        display(obj)
    elif isinstance(obj, Markdown):
        _collecting[-1].append(_markdown_html(obj.data))
    elif isinstance(obj, HTML):
        _collecting[-1].append(obj.data)
    else:  # a styled table
        _collecting[-1].append(obj.to_html())


@contextmanager
def collapsed(summary: str) -> Iterator[None]:
    """Show what is displayed inside the block folded under one line (``summary``), as a long table
    or a row of figures that the reader opens when wanted."""
    from IPython.display import HTML

    _collecting.append([])
    try:
        yield
    finally:
        parts = _collecting.pop()
    if parts:
        folded = f"<details><summary>{html.escape(summary)}</summary>\n" + "\n".join(parts) + "\n</details>"
        _emit(HTML(folded))


def show_markdown(text: str) -> None:
    """Display generated Markdown text in a notebook."""
    from IPython.display import Markdown

    if text:
        _emit(Markdown(text))


def show_html(text: str) -> None:
    """Display generated HTML (a figure as inline SVG) in a notebook."""
    from IPython.display import HTML

    if text:
        _emit(HTML(text))


# The metadata of the output after which an executed page has nothing more to show.
PAGE_ENDS = "analysis-page-ends"


def show_last_markdown(text: str) -> None:
    """Display generated Markdown as the page's last output: the book leaves out every cell after
    it (``analysis.study.book.cut_after_page_end``), so a page without results is one paragraph,
    not a row of empty section headings."""
    from IPython.display import Markdown, display

    display(Markdown(text), metadata={PAGE_ENDS: True})


def figure_html(fig: Figure, alt: str) -> str:
    """A figure as an HTML image with alternative text, the PNG inlined."""
    import base64
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" style="max-width: 100%;">'


def show_figures(
    figures: Iterable[tuple[str, Figure]],
    empty: str = "No figure: the data read here have no condition for it.",
    alt: str = "",
) -> int:
    """Display (title, figure) pairs, each with its title as alternative text, closing each
    figure; the number shown."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, Markdown

    shown = 0
    for title, fig in figures:
        if title:
            _emit(Markdown(f"**{title}**"))
        _emit(HTML(figure_html(fig, f"{alt}{': ' if alt and title else ''}{title}" or "figure")))
        plt.close(fig)
        shown += 1
    if not shown and empty:
        _emit(Markdown(empty))
    return shown


def show_figure(fig: Figure | None, alt: str, empty: str = "") -> None:
    """Display one figure with its alternative text (or a line saying why there is none)."""
    show_figures([("", fig)] if fig is not None else [], empty=empty, alt=alt)


def show_table(table: pd.DataFrame | None, empty: str = "No rows.", by: str | None = "model") -> None:
    """Display a table without its index, one table per value of ``by`` (a bold line names it),
    with single-valued bookkeeping columns moved into that line; or a line saying why there is none."""
    from IPython.display import HTML, Markdown

    if table is None or table.empty:
        if empty:
            _emit(Markdown(empty))
        return
    groups = list(table.groupby(by, sort=False)) if by in table.columns else [(None, table)]
    for key, part in groups:
        if key is not None:
            part = part.drop(columns=[by])
        constant = [c for c in CONSTANT_COLUMNS if c in part.columns and len(part) > 1 and part[c].nunique() == 1]
        notes = [f"{c.replace('_', ' ')}: {part[c].iloc[0]}" for c in constant]
        if key is not None or notes:
            _emit(Markdown((f"**{key}**" if key is not None else "") + (f" ({'; '.join(notes)})" if notes else "")))
        shown = part.drop(columns=constant)
        interactive = interactive_html(shown.map(unbroken_intervals)) if len(shown) > INTERACTIVE_ROWS else None
        _emit(HTML(interactive) if interactive else styled_table(shown))


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


def styled_table(table: pd.DataFrame):
    """A table as the book shows it: no index, compact cells, text escaped for HTML (``<=`` stays text).
    Long cells and headings wrap where the table would otherwise be wider than the page's column
    (at spaces, never inside an interval, a short cell or the first column, which names the row; a
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
                {"selector": "td.col0, td.short", "props": "white-space: nowrap;"},  # a row's name, a short text
                {"selector": f"td.{LONG_WORD}", "props": LONG_WORD_CELL},
                {"selector": "th", "props": f"{CELL} vertical-align: bottom;"},
            ]
        )
    )
    return styled.set_table_attributes('style="margin-left: 0"')
