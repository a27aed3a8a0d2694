"""The effective rank beyond the paper: per model and scope, the mean effective rank under the
fastest setting minus that under the slowest, with intervals from the book's one bootstrap engine
and verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.findings import quantities, roles, rules
from analysis.findings.bootstrap import CurveDraws, Estimate, combine, pooled
from analysis.findings.pooling import scope_rank
from analysis.findings.rules import FAILS, HOLDS, TOO_FEW, UNRESOLVED, Part


def effective_rank_table(draws: dict[str, CurveDraws]) -> pd.DataFrame:
    """Per model and scope: mean effective rank (all layers, q/k/v/o) under the fastest setting
    minus that under the slowest, per dataset and pooled per family, with intervals."""
    rows = []
    for model, cd in draws.items():
        by_family: dict[str, list[Estimate]] = {}
        for dataset in cd.datasets():
            settings = cd.settings(dataset)
            if len(settings) < 2:
                continue
            fast = quantities.mean_level(cd, dataset, settings[0], stat="effective_rank")
            slow = quantities.mean_level(cd, dataset, settings[-1], stat="effective_rank")
            if fast is None or slow is None:
                continue
            difference = combine(np.subtract, fast, slow)
            by_family.setdefault(vocabulary.family_of(dataset), []).append(difference)
            rows.append(
                _rank_row(
                    model,
                    dataset,
                    False,
                    f"{vocabulary.setting_label(settings[0])} - {vocabulary.setting_label(settings[-1])}",
                    estimate=difference,
                )
            )
        for family, estimates in by_family.items():
            family_estimate = pooled(estimates)
            if len(estimates) >= 2 and family_estimate is not None:
                rows.append(_rank_row(model, family, True, "fastest - slowest", estimate=family_estimate))
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return (
        table.assign(_s=table["scope"].map(scope_rank))
        .sort_values(["model", "_s"])
        .drop(columns="_s")
        .reset_index(drop=True)
    )


def _rank_row(model: str, scope: str, is_pooled: bool, contrast: str, *, estimate: Estimate) -> dict:
    part = Part(
        name="effective rank difference", estimate=estimate, side="above", bound=0.0, role=roles.SIMULATED, decides=True
    )
    low, high = part.interval()
    verdict = rules.decide([part])
    word = {
        HOLDS: "higher under fast thinking",
        FAILS: "lower under fast thinking",
        UNRESOLVED: "not resolved",
        TOO_FEW: TOO_FEW,
    }[verdict]
    return {
        "model": model,
        "scope": scope,
        "pooled": is_pooled,
        "contrast": contrast,
        "n": estimate.n,
        "value": estimate.value,
        "low": low,
        "high": high,
        "verdict": word,
    }
