"""How much of the fast/slow gap in gradient size response length explains: per-sample means and
a least-squares regression on length, on the setting and on both (``length_regression``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.findings.metrics import CONDITION_COLUMNS

SETTING_ORDER = vocabulary.SETTING_ORDER


def per_sample_means(df: pd.DataFrame, stat: str = "nuclear_norm", by_proj: bool = False) -> pd.DataFrame:
    """Mean of `stat` over layers (and projections unless `by_proj`) for every sample.

    A sample with more NaN values than the least-NaN sample of its condition is dropped (layers
    where a statistic is undefined for everyone, like the last next-layer cosine, drop nobody).
    Columns: model, dataset, setting, responses, condition, sample_index, [proj], value,
    n_response_tokens.
    """
    keys = CONDITION_COLUMNS + ["sample_index"] + (["proj"] if by_proj else [])
    per_sample = (
        df.assign(_nan=df[stat].isna())
        .groupby(keys, sort=True)
        .agg(value=(stat, "mean"), _nan=("_nan", "sum"), n_response_tokens=("n_response_tokens", "first"))
        .reset_index()
    )
    condition_keys = CONDITION_COLUMNS + (["proj"] if by_proj else [])
    least = per_sample.groupby(condition_keys)["_nan"].transform("min")
    return per_sample[per_sample["_nan"] == least].drop(columns="_nan").reset_index(drop=True)


def _setting_order(settings) -> list[str]:
    present = set(settings)
    return [s for s in SETTING_ORDER if s in present] + sorted(present - set(SETTING_ORDER))


def _indicators(values: pd.Series, levels: list[str]) -> np.ndarray:
    """0/1 columns, one per level (n x len(levels))."""
    columns = [(values == level).to_numpy(float) for level in levels]
    return np.stack(columns, axis=1) if columns else np.empty((len(values), 0))


def _ols(design: np.ndarray, y: np.ndarray) -> tuple[np.ndarray | None, float]:
    """Least-squares coefficients and R^2; None when the design is rank deficient."""
    if np.linalg.matrix_rank(design) < design.shape[1]:
        return None, np.nan
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1 - np.sum((y - design @ coef) ** 2) / total if total > 0 else np.nan
    return coef, float(r2)


def length_regression(
    df: pd.DataFrame, stat: str = "nuclear_norm", by_proj: bool = False, log_y: bool = True
) -> pd.DataFrame:
    """Is the gap in gradient size between settings only a response-length effect?

    Per (model, dataset, responses[, proj]), over the samples of all its settings, y = log of a
    sample's mean `stat` (the raw mean when `log_y` is False) is regressed by OLS on
    x = log(n_response_tokens) three ways: length only (y ~ x), setting only (y ~ setting) and
    both (y ~ x + setting), the setting a categorical factor against a reference setting (none,
    else the first of SETTING_ORDER present). If the setting coefficients shrink towards zero
    once length is in the model, response length accounts for the fast/slow gap; if they stay,
    the settings differ beyond length. With log_y the slope is an elasticity: the % change of
    the statistic per % change of response length. Correlational: length and content are not
    randomised.

    One row per non-reference setting (a single row with setting None when a group has one
    setting): group keys, n_samples, reference_setting, setting, slope_length_only,
    r2_length_only, coef_setting_only, r2_setting_only, slope_with_setting, coef_with_length,
    r2_with_setting, coef_change (= coef_with_length - coef_setting_only), n_dropped (samples
    with a non-positive value under log_y), reason.
    """
    samples = per_sample_means(df, stat, by_proj)
    group_keys = ["model", "dataset", "responses"] + (["proj"] if by_proj else [])
    rows = []
    for key, group in samples.groupby(group_keys, sort=True):
        rows += _group_fits(dict(zip(group_keys, key)), group, log_y)
    return pd.DataFrame(rows, columns=group_keys + RESULT_COLUMNS)


RESULT_COLUMNS = [
    "n_samples",
    "reference_setting",
    "setting",
    "slope_length_only",
    "r2_length_only",
    "coef_setting_only",
    "r2_setting_only",
    "slope_with_setting",
    "coef_with_length",
    "r2_with_setting",
    "coef_change",
    "n_dropped",
    "reason",
]


def _group_fits(keys: dict, group: pd.DataFrame, log_y: bool) -> list[dict]:
    """The three fits of one group's samples; one row per non-reference setting (see ``length_regression``)."""
    keep = group["n_response_tokens"] > 0
    if log_y:
        keep &= group["value"] > 0
    g = group[keep]
    base = dict(keys, n_samples=len(g), n_dropped=int((~keep).sum()))
    settings = _setting_order(g["setting"])
    y = np.log(g["value"].to_numpy(float)) if log_y else g["value"].to_numpy(float)
    x = np.log(g["n_response_tokens"].to_numpy(float))
    ones = np.ones_like(x)
    dummies = _indicators(g["setting"], settings[1:])
    length_only, r2_length = _ols(np.column_stack([ones, x]), y)
    setting_only, r2_setting = _ols(np.column_stack([ones, dummies]), y)
    both, r2_both = _ols(np.column_stack([ones, x, dummies]), y)
    fits = {"length only": length_only, "setting only": setting_only, "length and setting": both}
    reasons = [name for name, fit in fits.items() if fit is None]
    base.update(
        reference_setting=settings[0] if settings else None,
        slope_length_only=np.nan if length_only is None else float(length_only[1]),
        r2_length_only=r2_length,
        r2_setting_only=r2_setting,
        slope_with_setting=np.nan if both is None else float(both[1]),
        r2_with_setting=r2_both,
        reason=("unidentified: " + ", ".join(reasons)) if reasons else None,
    )
    rows = []
    for i, setting in enumerate(settings[1:] or [None]):
        alone = np.nan if setting is None or setting_only is None else float(setting_only[1 + i])
        adjusted = np.nan if setting is None or both is None else float(both[2 + i])
        rows.append(
            {
                **base,
                "setting": setting,
                "coef_setting_only": alone,
                "coef_with_length": adjusted,
                "coef_change": adjusted - alone,
            }
        )
    return rows
