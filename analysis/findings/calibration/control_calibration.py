"""Error rates of A4 and A5, simulated in the study's design through the functions the book uses.

- ``gap share`` (A4): every instruction under None CoT, Detailed CoT and Detailed CoT scored on as
  few tokens as None CoT (noisy as None CoT is: few tokens scored), paired; F1's true log gap
  ``F1_GAP`` and the subset's exactly ``scored_tokens.SHARE_MARGIN`` of it, the claim's boundary.
  A4's share (per dataset the subset's gap over F1's, ``combine``; pooled as every part is) must say
  "above the margin" at most 2.5% of the time.
- ``within`` (A5): a paired mean log ratio whose true value lies exactly at the margin of "nearly
  the same" (``rules.SAME_MARGIN``); its "within" part must say "holds" at most 2.5% of the time,
  and with no true difference "does not hold" at most 2.5%.

One run of each is ``gap_share_holds``, ``within_holds`` and ``within_fails``: the simulations of
``rule.GAP_SHARE`` and ``rule.WITHIN``.
"""

from __future__ import annotations

import numpy as np

from analysis.findings import roles, scored_tokens
from analysis.findings.bootstrap import Estimate, combine, pooled, resample_counts
from analysis.findings.calibration.designs import Design, _gap_estimate, _paired_logs
from analysis.findings.quantities import log_mean_curve
from analysis.findings.rules import FAILS, HOLDS, SAME_MARGIN, Part, Unit, decide

F1_GAP = 2.0  # a log gap of about x7, F1's size on the offline models


def _mean_log(values: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    (value,), draws = log_mean_curve(np.exp(values)[:, None], weights)
    return float(value), draws[:, 0]


def share_estimate(rng: np.random.Generator, design: Design, n_resamples: int) -> Estimate | None:
    """A4's pooled share where the subset reproduces exactly ``SHARE_MARGIN`` of F1's gap."""
    per_dataset = []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        none, detailed = _paired_logs(rng, n, fast_sd, slow_sd, design=design, effect=F1_GAP)
        subset = detailed + scored_tokens.SHARE_MARGIN * F1_GAP + fast_sd * rng.standard_normal(n)
        weights = resample_counts(n, n_resamples, rng)
        strata = ((f"d{h}", n),)
        levels = {
            name: _mean_log(v, weights) for name, v in (("none", none), ("detailed", detailed), ("subset", subset))
        }
        gap = Estimate(levels["subset"][0] - levels["detailed"][0], levels["subset"][1] - levels["detailed"][1], strata)
        f1 = Estimate(levels["none"][0] - levels["detailed"][0], levels["none"][1] - levels["detailed"][1], strata)
        per_dataset.append(combine(np.divide, gap, f1))
    return pooled(per_dataset)


def gap_share_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "the subset reproduces at least half of F1's gap" when it reproduces exactly half."""
    share = share_estimate(rng, design, n_resamples)
    part = Part("share", share, "above", scored_tokens.SHARE_MARGIN, Unit.SHARE, role=roles.SIMULATED)
    return decide([part]) == HOLDS


def within_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" (within the margin) with the true paired log ratio at the margin."""
    estimate = _gap_estimate(rng, design, SAME_MARGIN, n_resamples)
    return decide([Part("within", estimate, "within", SAME_MARGIN, Unit.RATIO, role=roles.SIMULATED)]) == HOLDS


def within_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" said not to hold with no true difference."""
    estimate = _gap_estimate(rng, design, 0.0, n_resamples)
    return decide([Part("within", estimate, "within", SAME_MARGIN, Unit.RATIO, role=roles.SIMULATED)]) == FAILS
