"""Error rates of the "within" rule (A5, and a step of S decided "about the same"), simulated in the
study's design through the functions the book uses: a paired mean log ratio whose true value lies
exactly at the margin of "nearly the same" (``rules.SAME_MARGIN``); its "within" part (over a
family, in every dataset) must say "holds" at most 2.5% of the time, and with no true difference
"does not hold" at most 2.5%.

One run of each is ``within_holds`` and ``within_fails``: the simulations of ``rule.WITHIN``.
"""

from __future__ import annotations

import numpy as np

from analysis.findings.calibration.designs import Design, _gap_estimates, family_part
from analysis.findings.rules import FAILS, HOLDS, SAME_MARGIN, Part, Unit, decide


def within_part(rng: np.random.Generator, design: Design, effect: float, n_resamples: int) -> Part:
    """The part "within the margin" on a simulated paired log ratio of true value ``effect`` (plus
    each dataset's offset), over a family in every dataset (``designs.family_part``)."""
    estimates = _gap_estimates(rng, design, effect, n_resamples)
    return family_part(estimates, name="within", side="within", bound=SAME_MARGIN, unit=Unit.RATIO)


def within_holds(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" (within the margin) with the true paired log ratio at the margin."""
    return decide([within_part(rng, design, SAME_MARGIN, n_resamples)]) == HOLDS


def within_fails(rng: np.random.Generator, design: Design, *, n_resamples: int, **_: object) -> bool:
    """ "nearly the same" said not to hold with no true difference."""
    return decide([within_part(rng, design, 0.0, n_resamples)]) == FAILS
