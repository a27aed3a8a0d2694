"""Skewed per-sample logs in both directions: each rule's false "holds" at skewness -2, -1, +1 and
+2, beside the rate it states, and the skewness of a store's own per-sample log values.

The study's simulations (``calibration.Design``) draw normal noise on the log scale; bare answers
with a near-zero loss make a long lower tail as plausible as the long upper tail of the scenarios.
``false_holds_by_skew`` reruns ``calibration.false_holds`` with the noise of ``ratio_sizes.log_noise`` at
each skewness. Where a rule cannot keep the promised 2.5% there, the rate it reaches is stated
(``calibration.rule.Rule.stated``, held by tests/test_calibration.py) and the verdict matrix's note
prints each check's (``stated_rates.check_rate``). ``measured_skew`` says how skewed a store's values are.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from analysis.core import vocabulary
from analysis.findings import calibration
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.calibration.rule import Rule
from analysis.findings.check_registry import Registry

SKEWS = (-2.0, -1.0, 1.0, 2.0)


def false_holds_by_skew(
    *,
    n: int = 5,
    reps: int = 1000,
    n_resamples: int = 400,
    seed: int = 0,
    skews: tuple[float, ...] = SKEWS,
    rules: tuple[Rule, ...] = calibration.FAILS_RULES,
    registry: Registry,
) -> pd.DataFrame:
    """``calibration.false_holds`` of each rule in each design of ``calibration.study_designs(n)``
    with per-sample logs of each skewness, beside the rate the rule states and the checks of
    ``registry`` it stands for."""
    by_rule = calibration.checks_by_rule(registry)
    rows = []
    for i, (name, design) in enumerate(calibration.study_designs(n).items()):
        for j, skew in enumerate(skews):
            for k, rule in enumerate(rules):
                rate = calibration.false_holds(
                    rule,
                    replace(design, skew=skew),
                    reps=reps,
                    n_resamples=n_resamples,
                    seed=seed + 1000 * i + 100 * j + k,
                )
                rows.append(
                    {
                        "rule": rule.name,
                        "checks": ", ".join(by_rule.get(rule, ())),
                        "design": name,
                        "skewness": skew,
                        "reps": reps,
                        "holds when false": rate,
                        "stated": rule.stated,
                    }
                )
    return pd.DataFrame(rows)


def measured_skew(draws: dict[str, CurveDraws], stat: str = "nuclear_norm") -> pd.DataFrame:
    """The skewness over instructions of the per-sample log values, per model, setting and response
    type: the median over datasets, projections and layers of each curve's skewness (``per layer``)
    and the median over datasets and projections of the skewness of each sample's mean log over
    the layers (``per sample``, what a gap averages). Curves of fewer than 3 instructions are left out."""
    cells: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for model, cd in draws.items():
        for (condition, _proj, key_stat), (matrix, _ids) in cd.samples.items():
            if key_stat != stat or matrix.shape[0] < 3 or not np.all(matrix > 0):
                continue
            _dataset, setting, responses = cd.conditions[condition]
            logs = np.log(matrix)
            cell = cells.setdefault((model, setting, responses), {"per layer": [], "per sample": []})
            cell["per layer"] += [float(v) for v in sps.skew(logs, axis=0) if np.isfinite(v)]
            whole = float(sps.skew(logs.mean(axis=1)))
            if np.isfinite(whole):
                cell["per sample"].append(whole)
    rows = [
        {
            "model": model,
            "setting": vocabulary.setting_label(setting),
            "responses": responses,
            "curves": len(cell["per sample"]),
            "skewness per layer (median)": float(np.median(cell["per layer"])) if cell["per layer"] else np.nan,
            "skewness per sample (median)": float(np.median(cell["per sample"])) if cell["per sample"] else np.nan,
        }
        for (model, setting, responses), cell in cells.items()
    ]
    return pd.DataFrame(rows)
