"""One battery for every check of the registry, as scikit-learn's ``parametrize_with_checks`` tests
every estimator: each check runs, through ``Check.run`` only, on the inputs its own fixture draws
(its ``battery``, ``analysis.findings.battery``): it holds on its truth, with every deciding effect at
least 5 standard errors from its bound; it does not hold or is not resolved on its falsity; it gives
no cell, or "not applicable" with its reason, where what it needs is missing; it says no verdict it
does not declare; and it is shown in the verdict matrix, the claims list and the methods pages. A
check with its deciding parts' sides reversed fails the battery. Checks left out say why."""

import dataclasses
import functools
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest

from analysis import checks
from analysis.findings.battery import Case, Fixture, NotInBattery
from analysis.findings.rules import FAILS, HOLDS, NOT_APPLICABLE, UNRESOLVED, Finding, Part
from analysis.findings.scopes import Check
from analysis.report import figures, verdicts

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("methods", "checks", "gap_methods", "training_methods")
IN_BATTERY = [c for c in checks.REGISTRY if isinstance(c.battery, Fixture)]
SE_FROM_BOUND = 5  # a truth's deciding effects lie at least this many standard errors from their bounds


def _fixture(check: Check) -> Fixture:
    fixture = check.battery
    assert isinstance(fixture, Fixture)
    return fixture


@functools.cache
def _found(check: Check, case: Case) -> tuple[Finding, ...]:
    """The check's findings on its fixture's inputs of ``case`` (each case drawn and run once)."""
    return tuple(check.run(_fixture(check).inputs(case)))


def _distance_in_errors(part: Part) -> float:
    """How many standard errors the part's value lies inside its claim's side of its bound; for a
    permutation test's statistic (G1), whose spread is its null's, infinite where it lies beyond
    every permutation (the smallest p-value the test can give) and 0 elsewhere."""
    assert part.estimate is not None, part.name
    if part.estimate.null is not None:
        return math.inf if part.estimate.p_value() <= 1 / (1 + len(part.estimate.null)) else 0.0
    value, bound = part.estimate.value, part.bound
    inside = {"above": value - bound, "below": bound - value, "within": bound - abs(value)}[part.side]
    return inside / part.estimate.standard_error()


def holds_on_truth(check: Check) -> None:
    found = _found(check, Case.TRUTH)
    assert found, f"{check.id}: no cell on its truth"
    assert all(f.verdict == HOLDS for f in found), [(f.scope, f.verdict) for f in found]
    for finding in found:
        for part in finding.deciding:
            errors = _distance_in_errors(part)
            assert math.isnan(errors) or errors >= SE_FROM_BOUND, (check.id, finding.scope, part.name, errors)


def not_held_on_falsity(check: Check) -> None:
    found = _found(check, Case.FALSITY)
    assert found, f"{check.id}: no cell on its falsity"
    assert all(f.verdict in (FAILS, UNRESOLVED) for f in found), [(f.scope, f.verdict) for f in found]


@pytest.mark.parametrize("check", IN_BATTERY, ids=lambda c: c.id)
def test_it_holds_on_its_truth_with_effects_far_from_their_bounds(check):
    holds_on_truth(check)


@pytest.mark.parametrize("check", IN_BATTERY, ids=lambda c: c.id)
def test_it_does_not_hold_or_is_not_resolved_on_its_falsity(check):
    not_held_on_falsity(check)


@pytest.mark.parametrize("check", IN_BATTERY, ids=lambda c: c.id)
def test_without_what_it_needs_it_gives_no_cell_or_says_why_not(check):
    found = _found(check, Case.MISSING)
    assert all(f.verdict == NOT_APPLICABLE for f in found), (_fixture(check).needs, [f.verdict for f in found])
    assert all(f.not_applicable is not None and f.not_applicable.reason for f in found)


@pytest.mark.parametrize("check", IN_BATTERY, ids=lambda c: c.id)
def test_it_gives_only_the_verdicts_it_declares(check):
    given = {f.verdict for case in Case for f in _found(check, case)}
    assert given <= _fixture(check).verdicts, (check.id, given - _fixture(check).verdicts)


@pytest.mark.parametrize("check", IN_BATTERY, ids=lambda c: c.id)
def test_it_is_shown_in_the_matrix_the_claims_and_the_methods(check):
    matrix = figures.verdict_svg(list(_found(check, Case.TRUTH)))
    assert matrix is not None and re.search(rf'aria-label="Verdict matrix of [^"]*\b{check.id}\b', matrix)
    assert f"**{check.id}** ({check.scope}): {check.plain}." in verdicts.claims_markdown()
    methods = "".join((ROOT / "book" / f"{page}.md").read_text() for page in METHODS)
    assert re.search(rf"\*\*{check.id}[: ]", methods) or f"**L and {check.id}" in methods


def test_every_check_of_the_registry_is_in_the_battery():
    """Every check has a fixture; a check left out would say why (``NotInBattery``)."""
    assert all(c.battery is not None for c in checks.REGISTRY)  # each declares a fixture, or why it has none
    left_out = {c.id: c.battery for c in checks.REGISTRY if isinstance(c.battery, NotInBattery)}
    assert not left_out and all(b.reason for b in left_out.values())


def _reversed(parts):
    """A parts function whose deciding parts claim the opposite side of their bound."""
    opposite = {"above": "below", "below": "above"}

    def flipped(*args, **kwargs):
        found = parts(*args, **kwargs)
        if not isinstance(found, list):
            return found
        return [dataclasses.replace(p, side=opposite.get(p.side, p.side)) if p.decides else p for p in found]

    return flipped


def test_a_check_with_its_sides_reversed_fails_the_battery():
    """F1 claiming None CoT's gradients smaller (its parts' sides reversed, its fixture its own): the
    battery catches it on its truth and on its falsity."""
    f1 = checks.get("F1")
    flipped = dataclasses.replace(f1, parts=_reversed(f1.parts))
    with pytest.raises(AssertionError):
        holds_on_truth(flipped)
    with pytest.raises(AssertionError):
        not_held_on_falsity(flipped)
