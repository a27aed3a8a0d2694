"""Long tables: interactive and offline where itables is installed, a plain styled table otherwise."""

import sys

import pandas as pd
import pytest

from analysis.report import display

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
