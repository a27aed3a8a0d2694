"""Error rates of the "within" rule (A5, and a step of S decided "about the same"), simulated in the
study's design through the functions the book uses: a paired mean log ratio whose true value lies
exactly at the margin of "nearly the same" (``rules.SAME_MARGIN``); its "within" part must say
"holds" at most 2.5% of the time, and with no true difference "does not hold" at most 2.5%.

One run of each is ``within_holds`` and ``within_fails``: the simulations of ``rule.WITHIN``.
"""

from __future__ import annotations

import numpy as np

from analysis.findings import roles
from analysis.findings.calibration.designs import Design, _gap_estimate
from analysis.findings.rules import FAILS, HOLDS, SAME_MARGIN, Part, Unit, decide


def within_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" (within the margin) with the true paired log ratio at the margin."""
    estimate = _gap_estimate(rng, design, SAME_MARGIN, n_resamples)
    return (
        decide(
            [
                Part(
                    name="within",
                    estimate=estimate,
                    side="within",
                    bound=SAME_MARGIN,
                    unit=Unit.RATIO,
                    role=roles.SIMULATED,
                    decides=True,
                )
            ]
        )
        == HOLDS
    )


def within_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" said not to hold with no true difference."""
    estimate = _gap_estimate(rng, design, 0.0, n_resamples)
    return (
        decide(
            [
                Part(
                    name="within",
                    estimate=estimate,
                    side="within",
                    bound=SAME_MARGIN,
                    unit=Unit.RATIO,
                    role=roles.SIMULATED,
                    decides=True,
                )
            ]
        )
        == FAILS
    )
