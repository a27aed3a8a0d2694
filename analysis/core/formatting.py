"""How numbers are written in the book: three significant digits, intervals in brackets."""

from __future__ import annotations

import math

import numpy as np


def fmt(value: float | None) -> str:
    """A number with three significant digits ("nan" when undefined)."""
    if value is None or not np.isfinite(value):
        return "nan"
    return f"{value:.3g}"


def fmt_interval(estimate: float, low: float, high: float) -> str:
    """ "est [low, high]", or just the estimate when the interval is undefined."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return fmt(estimate)
    return f"{fmt(estimate)} [{fmt(low)}, {fmt(high)}]"


def times(log_ratio: float) -> float:
    """A log ratio as the ratio a reader reads ("x" parts): its exponential."""
    return math.exp(log_ratio)
