"""How often one of many intervals errs, and Holm's correction over a set of directional decisions.

A step of the split is called larger or smaller where its 95% interval clears 0. Each such call is
wrong with a small probability (the gap rule's stated rate), so among many printed intervals some are
expected to mislead: ``expected_false`` says how many where no step had an effect. Holm's step-down
correction (``holm_kept``) keeps a set's decisions whose two-sided p-values, sorted, stay below
level / (m - rank): the family-wise rate of one false call in the set is then at most the level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from analysis.findings.bootstrap import LEVEL, Estimate


def two_sided_p(estimate: Estimate | None) -> float:
    """The two-sided p-value of an estimate's value against 0, on its interval's t distribution (its
    bias-corrected standard error and Welch degrees of freedom); NaN where either is undefined."""
    if estimate is None:
        return float("nan")
    se, df = estimate.standard_error(), estimate.df
    if not (np.isfinite(se) and se > 0 and np.isfinite(df) and np.isfinite(estimate.value)):
        return float("nan")
    return float(2 * sps.t.sf(abs(estimate.value) / se, df))


def holm_kept(p_values: Sequence[float], *, level: float = LEVEL) -> list[bool]:
    """Which of a set's decisions (their two-sided p-values) Holm's step-down correction keeps at the
    family-wise ``1 - level``: sorted ascending, the k-th (from 0) is kept while p <= alpha / (m - k),
    and no later one once one is not. A NaN p-value is never kept."""
    alpha, m = 1 - level, len(p_values)
    order = sorted(range(m), key=lambda i: (not np.isfinite(p_values[i]), p_values[i]))
    kept = [False] * m
    for rank, index in enumerate(order):
        if not (np.isfinite(p_values[index]) and p_values[index] <= alpha / (m - rank)):
            break
        kept[index] = True
    return kept


def expected_false(count: int, *, rate: float) -> float:
    """How many of ``count`` decisions would be wrong, each at ``rate``, were nothing to differ."""
    return count * rate
