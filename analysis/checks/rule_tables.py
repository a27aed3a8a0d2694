"""The error-rate tables of the study's checks' rules, as the reproducibility page shows them:
functions of the runs and the seed alone, the registry (``REGISTRY``) imported here, so that
``core.cache.simulated_table`` keys them by the code they run and by nothing of the report."""

from __future__ import annotations

import pandas as pd

from analysis.checks.study_registry import REGISTRY
from analysis.findings import calibration, skew


def false_holds_table(*, reps: int, seed: int) -> pd.DataFrame:
    """``calibration.false_holds_table`` of the rules of the study's checks (``REGISTRY``)."""
    return calibration.false_holds_table(registry=REGISTRY, reps=reps, seed=seed)


def false_holds_by_skew(*, reps: int, seed: int) -> pd.DataFrame:
    """``skew.false_holds_by_skew`` of the rules of the study's checks (``REGISTRY``)."""
    return skew.false_holds_by_skew(registry=REGISTRY, reps=reps, seed=seed)


def family_table(*, reps: int, seed: int) -> pd.DataFrame:
    """``calibration.family_table`` of the rules of the study's checks (``REGISTRY``): their error rates
    where a family's datasets differ."""
    return calibration.family_table(registry=REGISTRY, reps=reps, seed=seed)
