"""The power statements tested: of the cells a run leaves open and says about N instructions per
dataset would decide (``rules.Finding.instructions_needed``), how many a run at that size decided.

A statement is tested where the deciding run (profile ``decide``) holds the same check, model and
scope; the statements tested name at most ``LIMIT`` instructions per dataset, about the deciding
run's size. A family cell of the deciding run pools only its datasets, which may be fewer than the
stated run's: the table says how many instructions and datasets each side had.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.findings.rules import FAILS, HOLDS, UNRESOLVED, Finding

LIMIT = 40  # the statements tested: "about N would decide" with N at most this


def stated_sizes(findings: Sequence[Finding], *, limit: int = LIMIT) -> list[tuple[Finding, float]]:
    """The open cells whose statement names at most ``limit`` instructions per dataset, with that size."""
    out = []
    for finding in findings:
        if finding.verdict is UNRESOLVED:
            size = finding.instructions_needed()
            if size == size and size <= limit:
                out.append((finding, size))
    return out


def power_table(stated: Sequence[Finding], decided: Sequence[Finding], *, limit: int = LIMIT) -> pd.DataFrame:
    """One row per tested statement: the cell, the size it named, and how the deciding run's same cell
    went (its verdict, its instructions per dataset, its datasets); cells the deciding run lacks are
    left out (``untested`` counts them)."""
    by_cell = {(f.check, f.model, f.scope): f for f in decided}
    rows = []
    for finding, size in stated_sizes(stated, limit=limit):
        other = by_cell.get((finding.check, finding.model, finding.scope))
        if other is None:
            continue
        rows.append(
            {
                "check": finding.check,
                "model": finding.model,
                "scope": finding.scope,
                "would decide at": int(size),
                "stated at": finding.n_smallest,
                "deciding run": str(other.verdict),
                "its n per dataset": other.n_smallest,
                "its datasets": _datasets(other),
                "decided": other.verdict in (HOLDS, FAILS),
            }
        )
    return pd.DataFrame(rows)


def _datasets(finding: Finding) -> int:
    """How many datasets a cell's deciding parts rest on."""
    return max((len(p.estimate.strata) for p in finding.deciding if p.estimate is not None), default=0)


def untested(stated: Sequence[Finding], decided: Sequence[Finding], *, limit: int = LIMIT) -> int:
    """Statements of at most ``limit`` whose cell the deciding run does not hold."""
    held = {(f.check, f.model, f.scope) for f in decided}
    return sum((f.check, f.model, f.scope) not in held for f, _ in stated_sizes(stated, limit=limit))
