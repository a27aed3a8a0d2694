"""The registry's engine: a registry is an immutable tuple of checks (``Registry``), each a frozen
dataclass of its scope (``analysis.findings.scopes``); these functions read one, given as an
argument, and run its checks (``run_checks``). The study's registry, one module per check, is
``analysis.checks.REGISTRY``; nothing here names a check.
"""

from __future__ import annotations

from collections.abc import Iterable

from analysis.core.errors import StudyError
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId, Finding
from analysis.findings.scopes import Check, Inputs, Scope

Registry = tuple[Check, ...]  # the checks, in the book's order


def registry_of(checks: Iterable[Check]) -> Registry:
    """A registry of ``checks`` (in that order): each a check of one scope, each id once, each
    calibrated by rules (``calibration.rule.Rule`` objects)."""
    out: list[Check] = []
    for check in checks:
        if not isinstance(check, Check):
            raise StudyError(f"{check!r} is not a check of a scope (a subclass of scopes.Check)")
        if check.id in {c.id for c in out}:
            raise StudyError(f"check {check.id!r} is declared twice")
        strays = [r for r in check.calibrated_by if not isinstance(r, rule.Rule)]
        if strays:
            raise StudyError(f"check {check.id!r}: calibrated by {strays!r}, not rules (calibration.rule.Rule)")
        out.append(check)
    return tuple(out)


def extended(registry: Registry, *checks: Check) -> Registry:
    """A new registry: ``registry`` and then ``checks`` (the registry itself is left as it is)."""
    return registry_of((*registry, *checks))


def all_ids(registry: Registry) -> tuple[CheckId, ...]:
    """Every check of the registry, in the book's order."""
    return tuple(c.id for c in registry)


def check_id(text: str, registry: Registry) -> CheckId:
    """``text`` as the id of a check of the registry; an id the registry does not hold is refused."""
    if text not in all_ids(registry):
        raise StudyError(f"unknown check {text!r}; checks: {', '.join(all_ids(registry))}")
    return CheckId(text)


def get(text: str, registry: Registry) -> Check:
    """The check of that id (``check_id``: one the registry holds)."""
    wanted = check_id(text, registry)
    return next(check for check in registry if check.id == wanted)


def claim(check_id: str, registry: Registry) -> str:
    return get(check_id, registry).claim


def statistics_read(check_ids: Iterable[str], registry: Registry) -> tuple[str, ...]:
    """The per-sample statistics that the checks ``check_ids`` read beyond the nuclear norm curves."""
    return tuple(dict.fromkeys(stat for c in selected(check_ids, registry) for stat in c.reads))


def on_chapter(chapter: str, scope: Scope | None, registry: Registry) -> tuple[CheckId, ...]:
    """The checks a chapter shows (of one scope, if given), in the book's order."""
    return tuple(c.id for c in registry if chapter in c.chapters and scope in (None, c.scope))


def selected(checks: Iterable[str] | None, registry: Registry) -> list[Check]:
    """The checks of the registry among ``checks`` (None: all), in the book's order."""
    wanted = None if checks is None else set(checks)
    return [c for c in registry if wanted is None or c.id in wanted]


# --------------------------------------------------------------------------- the engine


def run_checks(
    draws: dict[str, CurveDraws],
    checks: Iterable[str] | None = None,
    *,
    registry: Registry,
    identical: dict[str, frozenset] | None = None,
    data_dir: str | None = None,
    reference: dict[str, CurveDraws] | None = None,
    pairs: dict[str, str] | None = None,
    declared: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> list[Finding]:
    """Every check of the registry in ``checks`` (None: all) that the curves cover, each run by its
    scope (``scopes.Check.run``): per dataset and pooled per family, or per Wiki files. The other
    inputs are those of :class:`scopes.Inputs` (identical pairs, reference curves, model pairs,
    declared pairs, and ``extra``, what the checks of other scopes read, e.g. training runs; None:
    none)."""
    given = Inputs(
        draws,
        identical=identical or {},
        data_dir=data_dir,
        reference=reference or {},
        pairs=pairs or {},
        declared=declared,
        extra=extra or {},
    )
    out: list[Finding] = []
    for check in selected(checks, registry):
        out += check.run(given)
    return out
