"""How numbers are written in the book: three significant digits, intervals in brackets, ratios
from their logs, one paragraph per model."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd


def fmt(value: float | None) -> str:
    """A number with three significant digits, its trailing zeros kept ("2.00", "0.702", "3.30",
    "1.23e+03"; "nan" when undefined), so that every number of the book reads at one precision."""
    if value is None or not np.isfinite(value):
        return "nan"
    text = f"{value:#.3g}"
    return text[:-1] if text.endswith(".") else text


def fmt_interval(estimate: float, low: float, high: float) -> str:
    """ "est [low, high]", or just the estimate when the interval is undefined."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return fmt(estimate)
    return f"{fmt(estimate)} [{fmt(low)}, {fmt(high)}]"


def times(log_ratio: float) -> float:
    """A log ratio as the ratio a reader reads ("x" parts): its exponential."""
    return math.exp(log_ratio)


def per_model(
    table: pd.DataFrame,
    say: Callable[[str, pd.DataFrame], str],
    *,
    empty: str = "",
    before: str = "",
    after: str = "",
) -> str:
    """Markdown, one paragraph per model of ``table`` (its ``model`` column, in the table's order):
    "**<model>.** " and what ``say`` writes of the model's rows; ``empty`` where the table has no
    row. ``before`` and ``after``: a paragraph before and after the models' (none where empty)."""
    if table.empty:
        return empty
    lines = [f"**{model}.** {say(model, rows)}" for model, rows in table.groupby("model", sort=False)]
    return "\n\n".join([*([before] if before else []), *lines, *([after] if after else [])])
