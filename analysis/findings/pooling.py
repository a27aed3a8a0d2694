"""Pooling a check over a family of datasets, and pairing instruct models with their base models.

Every check runs per dataset and per family: the family's value of a part is the mean of its
datasets' values, conditional on the datasets it names (the paper's claims are about its
datasets), its interval a stratified bootstrap (instructions resampled within each dataset; a
bootstrap-t one for the paper's mean nuclear norm, ``studentized.pool_any``) that carries the
datasets' own noise only: it says nothing of other datasets of the family. Each pooled part keeps
its datasets' own parts (``rules.Part.per_dataset``), so that a mean cannot hide them: their
outcomes decide the family's with the mean (``rules.family_outcome``: datasets decided in opposite
directions disagree; an "about the same" claim needs every dataset). A family's cell names the
datasets it pools where one of them does not decide alone (not applicable, too few instructions)
or the family has datasets it leaves out (``family_note``). Each finding's parts are marked where
the paper's mean nuclear norm and the geometric mean point opposite ways (one ratio above 1, the
other below) (``marked``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from analysis.core import vocabulary
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.rules import (
    TOO_FEW,
    CheckId,
    Finding,
    NotApplicable,
    Note,
    NoteKind,
    Part,
    Why,
    sign_disagreements,
)
from analysis.findings.studentized import pool_any

# What a check changes in a finding's parts from the parts themselves, with a note (None: none).
Adjust = Callable[[Sequence[Part]], tuple[list[Part], "Note | None"]]
# Why a check does not apply to a finding's parts (None: it applies).
Gate = Callable[[Sequence[Part]], "NotApplicable | None"]


def pool_parts(per_dataset: Mapping[str, Sequence[Part]]) -> list[Part]:
    """A family's parts from each dataset's (dataset -> parts): each part (matched by its role and
    facet, ``Part.key``) pooled over the datasets that have it, in the order the parts first appear,
    with those datasets' own parts that have an estimate (``Part.per_dataset``)."""
    keys = list(dict.fromkeys(p.key for parts in per_dataset.values() for p in parts))
    pooled = []
    for key in keys:
        same = [(d, p) for d, parts in per_dataset.items() for p in parts if p.key == key]
        pooled.append(
            replace(
                same[0][1],
                estimate=pool_any([p.estimate for _, p in same]),
                per_dataset=tuple((d, p) for d, p in same if p.estimate is not None),
            )
        )
    return pooled


def family_note(members: Mapping[str, Finding], absent: Mapping[str, str]) -> Note | None:
    """What a family's cell says of its datasets where one of them does not decide alone or is left
    out: the datasets it pools, each pooled one where the check does not apply or that has too few
    instructions (with why), and the family's datasets without the check's parts (``absent``:
    dataset -> why); None where every dataset is pooled and decides."""
    alone = {
        d: f"not applicable ({f.not_applicable.reason})"
        if f.not_applicable is not None
        else f"too few instructions ({f.n_smallest})"
        for d, f in members.items()
        if f.not_applicable is not None or f.verdict is TOO_FEW
    }
    if not alone and not absent:
        return None
    left_out: dict[str, list[str]] = {}  # the datasets left out, by why
    for dataset, why in absent.items():
        left_out.setdefault(why, []).append(dataset)
    pieces = [f"pooled over {', '.join(members)}"]
    pieces += [f"{d} alone: {why}" for d, why in alone.items()]
    pieces += [f"not pooled: {', '.join(datasets)} ({why})" for why, datasets in left_out.items()]
    return Note(NoteKind.FAMILY_DATASETS, "; ".join(pieces), (*alone, *absent))


@dataclass(frozen=True)
class Pooling:
    """What a check does around pooling: ``after_pooling`` recomputes from its pooled parts (e.g. a
    share); ``adjust`` changes every finding's parts (e.g. F2's deciding part); ``gate`` says why
    the check does not apply to a finding's parts (empty where it does)."""

    after_pooling: Callable[[list[Part]], list[Part]] | None = None
    adjust: Adjust | None = None
    gate: Gate | None = None


def family_findings(
    check: CheckId,
    model: str,
    by_dataset: dict[str, list[Part]],
    *,
    note: Note | None = None,
    how: Pooling = Pooling(),
    absent: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Per-dataset findings of one check, then one pooled finding per family with two datasets or
    more (``how.after_pooling`` applied to the pooled parts, ``how.adjust`` to every finding's
    parts), each ``marked``; a finding whose parts ``how.gate`` finds a reason against (e.g. a
    precondition not established) is "not applicable" with the reason. A family's finding names its
    datasets where one does not decide alone or one is left out (``family_note``; ``absent``: the
    datasets of the model without the check's parts, and why)."""

    def finding(scope: str, pooled: bool, parts: Sequence[Part], said: Note | None = None) -> Finding:
        shown, notes = marked(parts, note, adjust=how.adjust)
        notes += (said,) if said is not None else ()
        return Finding(check, model, scope, pooled, shown, notes, not_applicable=how.gate(shown) if how.gate else None)

    out = [finding(d, False, parts) for d, parts in by_dataset.items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = {d: parts for d, parts in by_dataset.items() if vocabulary.family_of(d) == family}
        if len(members) >= 2:
            parts = pool_parts(members)
            if how.after_pooling is not None:
                parts = how.after_pooling(parts)
            cells = {f.scope: f for f in out if f.scope in members}
            left_out = {d: why for d, why in (absent or {}).items() if vocabulary.family_of(d) == family}
            out.append(finding(family, True, parts, family_note(cells, left_out)))
    return out


def marked(
    parts: Sequence[Part], note: Note | None = None, *, adjust: Adjust | None = None
) -> tuple[tuple[Part, ...], tuple[Note, ...]]:
    """(parts, notes) of a finding: the check's ``adjust`` applied (its note added), and the
    paper's-quantity parts that disagree in sign with their geometric-mean part marked ``opposite``,
    with a note naming them."""
    notes = [note] if note is not None else []
    if adjust is not None:
        parts, said = adjust(parts)
        notes += [said] if said is not None else []
    opposite = {p.key[:2]: p.name for p in sign_disagreements(parts)}
    if opposite:
        parts = [replace(p, opposite=True) if p.paper and p.key[:2] in opposite else p for p in parts]
        names = tuple(sorted(opposite.values()))
        notes.append(
            Note(
                NoteKind.OPPOSITE_SIGN,
                "the paper's mean nuclear norm and the geometric mean point opposite ways (one ratio above 1, the other below): "
                + ", ".join(names),
                names,
            )
        )
    return tuple(parts), tuple(notes)


def scope_rank(scope: str) -> int:
    """Families first (math, commonsense, Wiki), then datasets in the book's order."""
    families = list(vocabulary.FAMILY_DATASETS)
    return families.index(scope) if scope in families else len(families) + vocabulary.dataset_rank(scope)


def reasoning_datasets(cd: CurveDraws) -> list[str]:
    """The datasets of a model's curves other than Wiki, in their stored order."""
    return [d for d in cd.datasets() if d != vocabulary.WIKI_DATASET]


def _common_prefix_length(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def default_model_pairs(templates: dict[str, str]) -> dict[str, str]:
    """Pair each instruct model with the base model whose name shares its longest prefix.

    `templates` maps model name -> "base" | "instruct". Returns instruct -> base. Ties go to the
    alphabetically first base model.
    """
    bases = sorted(m for m, t in templates.items() if t == "base")
    if not bases:
        return {}
    return {
        m: max(bases, key=lambda b: (_common_prefix_length(m, b), -bases.index(b)))
        for m, t in sorted(templates.items())
        if t == "instruct"
    }


def model_pairs(models: Sequence[str], templates: dict[str, str]) -> dict[str, str]:
    """instruct -> base: the paper's matched pairs where both are present, the rest by
    ``default_model_pairs``."""
    from analysis.core.registry import PAPER_PAIRS

    pairs = {ins: base for base, ins in PAPER_PAIRS if base in models and ins in models}
    rest = {m: t for m, t in templates.items() if m in models and m not in pairs and m not in pairs.values()}
    if any(t == "base" for t in rest.values()) and any(t == "instruct" for t in rest.values()):
        pairs.update(default_model_pairs(rest))
    elif any(t == "instruct" for t in rest.values()):
        bases = {m: t for m, t in templates.items() if t == "base" and m in models}
        pairs.update({k: v for k, v in default_model_pairs({**bases, **rest}).items() if k in rest})
    return pairs


def is_own_base(instruct: str, base: str, declared: dict[str, str] | None = None) -> bool:
    """Whether ``base`` is the base model ``instruct`` was tuned from: a pair of the paper
    (``registry.PAPER_PAIRS``) or one the user declares (instruct -> base)."""
    from analysis.core.registry import PAPER_PAIRS

    return (base, instruct) in set(map(tuple, PAPER_PAIRS)) or (declared or {}).get(instruct) == base


def not_applicable_reason(instruct: str, base: str) -> NotApplicable:
    """Why F4 does not apply to a pair of models."""
    return NotApplicable(
        Why.NOT_ITS_BASE,
        f"{instruct} is not an instruct model of {base}",
        "not a pair of the paper, none declared; the check compares an instruct model with its own base model, and "
        "across families it measures something else",
    )
