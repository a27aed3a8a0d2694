"""Long tables: interactive and offline where itables is installed, a plain styled table otherwise."""

import sys

import pandas as pd
import pytest

from analysis.report import blocks, display

LONG = pd.DataFrame({"scope": [f"dataset {i}" for i in range(40)], "numbers": ["<= 0.1"] * 40})


def test_without_itables_a_long_table_stays_a_plain_table(monkeypatch):
    monkeypatch.setitem(sys.modules, "itables", None)  # import itables raises ImportError
    assert display.interactive_html(LONG) is None


def test_with_itables_a_long_table_is_interactive_and_needs_no_network(monkeypatch):
    pytest.importorskip("itables")
    monkeypatch.setattr(display, "_itables_ready", False)
    html = display.interactive_html(LONG)
    assert "new ITable" in html and "dataset 39" in html
    assert "<= 0.1" not in html  # cell text is escaped, not read as HTML
    assert "unpkg.com" not in html and "cdn." not in html


def test_a_fold_renders_its_tables_figures_and_markdown_inside_one_details(monkeypatch):
    import IPython.display as ipd
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setitem(sys.modules, "itables", None)
    fig, _ = plt.subplots()
    folded = blocks.fold(
        "The numbers & more",
        [
            blocks.Table(pd.DataFrame({"model": ["m", "m"], "scope": ["a", "b"], "numbers": ["<= 1", "2"]})),
            *blocks.figures([("one figure", fig)]),
            blocks.Markdown("*a note*"),
        ],
    )
    outputs = display.outputs(folded)
    assert len(outputs) == 1 and outputs[0][0] == "html"
    html = outputs[0][1]
    assert html.startswith("<details><summary>The numbers &amp; more</summary>") and html.endswith("</details>")
    assert "<strong>m</strong>" in html and "&lt;= 1" in html and "<em>a note</em>" in html
    assert 'src="data:image/png;base64,' in html and "<strong>one figure</strong>" in html
    assert not plt.fignum_exists(fig.number)  # a figure is closed once drawn
    # an empty fold, or one whose blocks show nothing, shows nothing
    assert display.outputs(blocks.fold("nothing", [])) == []
    assert display.outputs(blocks.fold("nothing shown", [blocks.Markdown(""), blocks.Table(None, empty="")])) == []

    shown = []
    monkeypatch.setattr(ipd, "display", lambda obj, **keywords: shown.append((obj, keywords)))
    display.show([blocks.fold("nothing", []), folded, blocks.Markdown("after"), blocks.PageEnd("the end")])
    assert [type(obj) for obj, _ in shown] == [ipd.HTML, ipd.Markdown, ipd.Markdown]
    shown_html = shown[0][0].data  # the one renderer shows what ``outputs`` gives (a styled table's id aside)
    assert (
        shown_html.startswith("<details><summary>The numbers &amp; more</summary>") and "<em>a note</em>" in shown_html
    )
    assert shown[1][0].data == "after" and shown[1][1] == {}  # outside a fold, Markdown shows as Markdown
    assert shown[2][0].data == "the end" and shown[2][1] == {"metadata": {display.PAGE_ENDS: True}}
    display.show(None)
    display.show(blocks.Markdown("one block"))
    assert len(shown) == 4 and shown[-1][0].data == "one block"


def test_a_table_wraps_to_the_column_but_never_inside_an_interval_or_a_short_cell():
    long = "unidentified: length and setting <= 1"
    table = pd.DataFrame({"scope": ["aqua"], "AUROC": ["0.75 [0.0201, 0.998]"], "n": [5], "note": [long]})
    html = display.styled_table(table).to_html()
    assert "0.75 [0.0201,\u00a00.998]" in html  # a break only between the estimate and its interval
    assert "unidentified: length and setting &lt;= 1" in html  # a long text wraps at its spaces
    assert display.short("None CoT") and not display.short("too few samples") and not display.short(3)
    assert "white-space: normal" in html and "td.short" in html  # short texts and the first column on one line
    assert 'class="data row0 col0 short"' in html and 'class="data row0 col3" ' in html
    assert display.unbroken_intervals(3) == 3


def test_a_long_word_such_as_a_file_path_may_break_and_only_it(monkeypatch):
    path = "grads_exp/cot_500/gemma2_2b/grads_aqua_train_no_cot.jsonl"
    table = pd.DataFrame({"model": ["m"], "file": [path], "status": ["matches the published file"]})
    html = display.styled_table(table).to_html()
    assert f'class="data row0 col1 {display.LONG_WORD}"' in html and "overflow-wrap: anywhere" in html
    assert not display.long_word("matches the published file") and not display.long_word("aqua/none/correct")
    pytest.importorskip("itables")
    monkeypatch.setattr(display, "_itables_ready", True)
    assert f'"className": "{display.LONG_WORD}", "targets": [1]' in display.interactive_html(table)


def test_a_first_column_of_sentences_wraps_one_of_names_stays_whole():
    """The claims table names its rows by the paper's claim in words: that column wraps, or the table
    is cut at the page's column; a column of short names (a model, a scope) stays on one line."""
    claims = pd.DataFrame(
        {"the paper's claim": ["Fast thinking gives larger gradients than slow thinking"], "size": ["x4"]}
    )
    names = pd.DataFrame({"model": ["smollm2-135m-instruct"], "size": ["x4"]})
    assert "td.col0" not in display.styled_table(claims).to_html()
    assert "td.col0" in display.styled_table(names).to_html()
