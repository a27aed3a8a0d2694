"""How often one of many intervals errs, and Holm's correction (``findings.multiplicity``)."""

import math

import numpy as np
import pytest

from analysis.findings import multiplicity
from analysis.findings.bootstrap import Estimate


def test_holm_keeps_decisions_while_their_sorted_p_values_stay_under_the_stepped_level():
    # m = 4 at 5%: 0.01 <= 0.0125 kept, 0.02 <= 0.0167 not: it and every later one dropped
    assert multiplicity.holm_kept([0.02, 0.01, 0.03, 0.2]) == [False, True, False, False]
    assert multiplicity.holm_kept([0.001, 0.01, 0.016, 0.04]) == [True, True, True, True]
    assert multiplicity.holm_kept([math.nan, 0.001]) == [False, True]
    assert multiplicity.holm_kept([]) == []


def test_the_two_sided_p_value_is_the_t_test_of_the_estimate_against_zero():
    draws = np.random.default_rng(0).normal(0.5, 0.1, 4000)
    estimate = Estimate(0.5, draws, (("d", 30),))
    p = multiplicity.two_sided_p(estimate)
    assert 0 < p < 1e-4
    assert multiplicity.two_sided_p(Estimate(0.0, draws - 0.5, (("d", 30),))) == pytest.approx(1.0)
    assert multiplicity.expected_false(40, rate=0.025) == pytest.approx(1.0)
