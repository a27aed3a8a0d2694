"""Findings made by hand for the report's tests: a part of a chosen value and spread, and a finding
of a chosen verdict on its check's headline part, as ``rules.decide`` would reach it."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from analysis.checks import get
from analysis.findings import roles
from analysis.findings.bootstrap import Estimate
from analysis.findings.rules import (
    FAILS,
    HOLDS,
    NOT_APPLICABLE,
    TOO_FEW,
    UNRESOLVED,
    Finding,
    NotApplicable,
    Note,
    Part,
    Role,
    Side,
    Unit,
    Verdict,
    Why,
)

# (log value, spread of the draws, instructions) that give each verdict to a part "above 0"
VALUES = {
    HOLDS: (math.log(4.0), 0.05, 12),
    FAILS: (-math.log(2.0), 0.05, 12),
    UNRESOLVED: (0.1, 1.0, 12),
    TOO_FEW: (math.log(4.0), 0.05, 3),
}


def estimate(value: float, sd: float = 0.05, n: int = 12, datasets: tuple[str, ...] = ("aqua",)) -> Estimate:
    """An estimate of ``value`` whose draws have exactly the spread ``sd``, ``n`` instructions per dataset."""
    z = np.random.default_rng(0).standard_normal(400)
    z = (z - z.mean()) / z.std(ddof=1)
    return Estimate(float(value), value + sd * z, tuple((d, n) for d in datasets))


def part(
    value: float,
    *,
    role: Role = roles.F1_GAP,
    sd: float = 0.05,
    n: int = 12,
    side: Side = "above",
    bound: float = 0.0,
    unit: Unit = Unit.RATIO,
    name: str = "None / Detailed (all layers)",
    datasets: tuple[str, ...] = ("aqua",),
    **keywords,
) -> Part:
    keywords.setdefault("decides", True)
    return Part(
        name=name, estimate=estimate(value, sd, n, datasets), side=side, bound=bound, unit=unit, role=role, **keywords
    )


def ratio_part(
    shown: float,
    factor: float,
    *,
    role: Role = roles.F1_GAP,
    n: int = 12,
    bound: float = 1.0,
    datasets: tuple[str, ...] = ("aqua",),
    **keywords,
) -> Part:
    """A ratio part that a reader sees as ``shown`` [``shown / factor``, ``shown * factor``], claimed
    above the ratio ``bound``."""
    from scipy import stats

    half = math.log(factor) / stats.t.ppf(0.975, n - 1) / math.sqrt(n / (n - 1))  # the draws' spread
    return part(math.log(shown), role=role, sd=half, n=n, bound=math.log(bound), datasets=datasets, **keywords)


def verdict_part(verdict: Verdict, *, role: Role = roles.F1_GAP, name: str | None = None, **keywords) -> Part:
    """A part "above 0" that decides ``verdict`` alone (``VALUES``)."""
    value, sd, n = VALUES[verdict]
    return part(value, role=role, sd=sd, n=n, name=name or role.description, **keywords)


def finding(
    check: str,
    verdict: Verdict | str,
    *,
    model: str = "m",
    scope: str = "math_reasoning",
    pooled: bool = True,
    parts: tuple[Part, ...] | None = None,
    notes: tuple[Note, ...] = (),
    reason: str = "m is not an instruct model",
    why: Why = Why.NOT_ITS_BASE,
) -> Finding:
    """A finding of ``check`` whose verdict is ``verdict``: one part of the check's headline role (its
    first declared role where it has no headline) that decides it, unless ``parts`` are given; where
    not applicable, ``reason`` (of kind ``why``) and no parts."""
    verdict = Verdict(verdict)
    if verdict is NOT_APPLICABLE:
        return Finding(check, model, scope, pooled, parts or (), notes, NotApplicable(why, reason))
    if parts is None:
        declared = get(check)
        role = declared.headline or declared.says[0][0]
        parts = (verdict_part(verdict, role=role),)
    made = Finding(check, model, scope, pooled, tuple(parts), notes)
    if made.verdict is not verdict:
        raise ValueError(f"these parts decide {made.verdict}, not {verdict}")
    return made


def dataset_part(dataset: str, value: float, *, sd: float = 0.05, n: int = 12, **keywords) -> Part:
    """A dataset's own part of ``value`` (a log ratio), its draws of spread exactly ``sd``, drawn
    apart from every other dataset's (datasets are resampled independently)."""
    z = np.random.default_rng(sum(map(ord, dataset))).standard_normal(400)
    draws = value + sd * (z - z.mean()) / z.std(ddof=1)
    made = part(value, sd=sd, n=n, datasets=(dataset,), **keywords)
    return replace(made, estimate=Estimate(float(value), draws, ((dataset, n),)))


def family_cells(check: str, values: dict[str, float], *, model: str = "m", **keywords) -> list[Finding]:
    """A family's cell of ``check`` (math reasoning) pooled from datasets whose parts of its headline
    role have these values (``pooling.pool_parts``), then each dataset's cell."""
    from analysis.findings.pooling import pool_parts

    declared = get(check)
    role = declared.headline or declared.says[0][0]
    parts = {d: dataset_part(d, v, role=role, **keywords) for d, v in values.items()}
    (family,) = pool_parts({d: [p] for d, p in parts.items()})
    return [
        Finding(check, model, "math_reasoning", True, (family,)),
        *(Finding(check, model, d, False, (p,)) for d, p in parts.items()),
    ]
