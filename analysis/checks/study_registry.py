"""The study's registry: the list of the check modules (``MODULES``, in the book's order), their
checks (``REGISTRY``), and the registry's engine (``analysis.findings.check_registry``) on it
unless another registry is passed (``extended(REGISTRY, check)``)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from analysis.checks import (
    a3_equal_loss,
    a5_context,
    f1_larger,
    f2_rougher,
    f3_irrelevant,
    f4_instruct,
    f5_wiki,
    g1_beyond_loss,
    l2_length,
    l_content,
    s_gap_split,
    t1_predicts,
    t2_early_layers,
    t3_persists,
)
from analysis.findings import check_registry as engine
from analysis.findings.check_registry import Registry, registry_of
from analysis.findings.rules import CheckId
from analysis.findings.scopes import Check, Scope

MODULES = (
    f1_larger,
    f2_rougher,
    f3_irrelevant,
    f4_instruct,
    f5_wiki,
    l_content,
    l2_length,
    t1_predicts,
    t2_early_layers,
    t3_persists,
    s_gap_split,
    g1_beyond_loss,
    a3_equal_loss,
    a5_context,
)
REGISTRY: Registry = registry_of(module.CHECK for module in MODULES)


def all_ids(registry: Registry = REGISTRY) -> tuple[CheckId, ...]:
    """Every check of the registry, in the book's order."""
    return engine.all_ids(registry)


def check_id(text: str, registry: Registry = REGISTRY) -> CheckId:
    """``text`` as the id of a check of the registry; an id the registry does not hold is refused."""
    return engine.check_id(text, registry)


def get(text: str, registry: Registry = REGISTRY) -> Check:
    """The check of that id."""
    return engine.get(text, registry)


def claim(text: str, registry: Registry = REGISTRY) -> str:
    return engine.claim(text, registry)


def statistics_read(check_ids: Iterable[str], registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The per-sample statistics that the checks ``check_ids`` read beyond the nuclear norm curves."""
    return engine.statistics_read(check_ids, registry)


def on_chapter(chapter: str, scope: Scope | None = None, registry: Registry = REGISTRY) -> tuple[CheckId, ...]:
    """The checks a chapter shows (of one scope, if given), in the book's order."""
    return engine.on_chapter(chapter, scope, registry)


def selected(checks: Iterable[str] | None, registry: Registry = REGISTRY) -> list[Check]:
    """The checks of the registry among ``checks`` (None: all), in the book's order."""
    return engine.selected(checks, registry)


run_checks = partial(engine.run_checks, registry=REGISTRY)
"""The engine's ``check_registry.run_checks`` on the study's registry (another one passed as
``registry=``)."""
