"""The kinds of check, one per scope (what one verdict is about), each with its typed parts.

A check is a frozen dataclass of one scope, built with keyword arguments: ``PerModelCheck`` (one
model's datasets, pooled per family), ``PairCheck`` (an instruct model with its base model),
``WikiCheck`` (a model's Wiki files) and ``TrainingRunCheck`` (one base model's fine-tuning runs).
Each declares the signature of its ``parts`` function and runs itself over the inputs (``run``);
a check of a new scope is one more subclass of ``Check`` with its own ``run``. The checks of the
study are declared in ``analysis.checks``.

A per-model parts function takes one argument, the ``dataset_context.DatasetContext`` of a model's
curves on one dataset (``Inputs.context`` makes it): what it reads beyond the curves (identical
pairs, the data the instructions come from, the store) are that context's fields, so that a new input is one more
field, not a keyword threaded through every parts function. Its note and its ``unknown`` read the
same contexts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, Literal

from analysis.core import vocabulary
from analysis.findings import training_checks
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.calibration.rule import Rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.gap_split import Dropped
from analysis.findings.pooling import (
    Adjust,
    Gate,
    Pooling,
    family_findings,
    is_own_base,
    not_applicable_reason,
    reasoning_datasets,
)
from analysis.findings.rules import CheckId, Finding, NotApplicable, Note, NoteKind, Part, Role, Verdict

if TYPE_CHECKING:
    import pandas as pd

    from analysis.findings.battery import Battery

# What one verdict is about (a check's scope, as the book names it; a finding's own scope is a
# dataset or a family).
Scope = Literal["per model", "per base-instruct pair", "Wiki files", "per training run"]
PER_MODEL: Scope = "per model"
PER_PAIR: Scope = "per base-instruct pair"
WIKI_FILES: Scope = "Wiki files"
PER_TRAINING_RUN: Scope = "per training run"  # one base model's fine-tuning runs, per arm trained on

SUMMARY_CHAPTERS = ("intro", "summary")  # the pages that show every check
LACKS_CONDITION = "a condition the check reads is not stored"  # why a dataset has no parts, where nothing else says


@dataclass
class Inputs:
    """What the checks read: every model's curves, the None-CoT instructions whose irrelevant answer
    equals the correct one (per dataset), the data the instructions come from, reasoning curves for
    Wiki-only data (per model), the instruct -> base pairs and the pairs the user declares."""

    draws: dict[str, CurveDraws]
    identical: dict[str, frozenset] = field(default_factory=dict)
    data_dir: str | None = None  # the data the instructions come from (None: none, as in a simulation)
    reference: dict[str, CurveDraws] = field(default_factory=dict)
    pairs: dict[str, str] = field(default_factory=dict)
    declared: dict[str, str] | None = None
    extra: dict[str, object] = field(default_factory=dict)  # what the checks of other scopes read, by name

    def context(self, cd: CurveDraws, dataset: str) -> DatasetContext:
        """What a per-model check reads of one model's curves on one dataset."""
        store = self.extra.get(STORE)
        return DatasetContext(
            curves=cd,
            dataset=dataset,
            identical=frozenset(self.identical.get(dataset, ())),
            data_dir=self.data_dir,
            store=None if store is None else str(store),
        )


STORE = "results store"  # Inputs.extra: the store the curves were read from (named in commands)


@dataclass(frozen=True)
class PartFigure:
    """A forest plot of one part of a check (found by its ``role``), per model and scope, with its
    interval."""

    part: Role
    x_label: str
    caption: str
    empty: str
    reference: float | None = 0.0


@dataclass(frozen=True)
class ChainStep:
    """One step of a ``Chain``: the role of its parts, its name in tables and figures, what it
    changes in a reader's words, and the two settings it compares (``fast`` less ``slow``)."""

    role: Role
    name: str
    words: str
    fast: str
    slow: str


@dataclass(frozen=True, kw_only=True)
class Chain:
    """A check whose parts add up: a total (``total``, its role, and how tables name it,
    ``total_name``) that its steps (``steps``, in their fixed order) split exactly, in each norm of
    ``norms`` (the facet of its parts, and the norm's name; the first is the check's own), with the
    parts of ``beside`` (role, name) in the tables but not among the bars, and ``lines``: the roles of
    each step's intercept and slope on a covariate (facet: the step's name), where it has them, and
    ``by_design``: the role of the step that holds the covariate equal by design and the name of the
    span whose line's intercept estimates the same by regression. The report draws any such check as
    bars and tables from this declaration and the check's findings.

    ``conditions``: the settings the chain reads per dataset (named in what computes a missing one);
    ``dropped``: per dataset and condition of a model's curves, the instructions a condition lacks
    that another holds (``gap_split.Dropped``); ``caption``: how to read its figure, with
    ``{norm}``, ``{level}`` and ``{margin}`` filled in."""

    total: Role
    total_name: str
    steps: tuple[ChainStep, ...]
    beside: tuple[tuple[Role, str], ...] = ()
    lines: tuple[Role, Role] | None = None
    by_design: tuple[Role, str] | None = None
    norms: tuple[tuple[tuple[str, ...], str], ...]
    conditions: tuple[str, ...]
    dropped: Callable[[CurveDraws], Sequence[Dropped]]
    caption: str

    def step(self, role: Role) -> ChainStep:
        """The step whose parts have that role."""
        for step in self.steps:
            if step.role is role:
                return step
        raise KeyError(f"no step of the chain has the role {role.description!r}")


@dataclass(frozen=True)
class LayerSplit:
    """A check whose gap the chapter "Where the gap comes from" splits per layer into the terms of
    the log nuclear norm (``averaging.layer_decomposition``): the two conditions it compares
    (``averaging.F1_CONTRAST``'s shape: their settings, then their responses) and how a figure names
    that contrast."""

    contrast: tuple[tuple[str, str], tuple[str, str]]
    title: str


Sized = Callable[[Part], str]  # how the report writes a part's size with its interval ("x1.3 [x1.1, x1.5]")
Column = tuple[str, Role, "tuple[str, ...] | None"]  # a table's column: its label, the part's role and facet


@dataclass(frozen=True, kw_only=True)
class Section:
    """What a check shows in its own section of its chapters, beyond the verdict matrix that shows
    every check: the report renders any check's section from this (``report.check_sections``) by
    looping over the registry, and names no check. Where the check words its own numbers, its
    functions receive the report's way of writing a size (``Sized``), so that nothing in the check
    reaches up into the report.

    ``title``: the section's lead-in; ``intro``: what it asks, ``{id}`` standing for the check's id;
    ``lead``: what each model's paragraph opens with (or a function of that model's answered cells);
    ``cell``: one answered cell's clause (None: "scope: size (id **verdict**)", the size the cell
    prints); ``notes``: the kinds of note of its findings printed after the paragraphs;
    ``columns``: the parts its table shows per model and scope (facet None: the role's first part),
    or ``table``: a function that makes its table; ``closing``: a line after the table, from all its
    findings; ``empty``: what it says where it has no cell."""

    title: str
    intro: str = ""
    lead: Callable[[Sequence[Finding]], str] | str = ""
    cell: Callable[[Finding, Sized], str] | None = None
    notes: tuple[NoteKind, ...] = ()
    columns: tuple[Column, ...] = ()
    table: Callable[[Sequence[Finding], Sized], pd.DataFrame] | None = None
    closing: Callable[[Sequence[Finding]], str] | None = None
    empty: str = ""


@dataclass(frozen=True)
class Words:
    """What a check's verdict says in plain words, per verdict (the chapter's paragraphs write them
    after the numbers): e.g. S "the reasoning before the answer makes the answer's own gradient smaller"."""

    holds: str
    fails: str
    unresolved: str

    def of(self, verdict: Verdict) -> str:
        """The words of a verdict ("" for one without words: too few samples, not applicable)."""
        return {Verdict.HOLDS: self.holds, Verdict.FAILS: self.fails, Verdict.UNRESOLVED: self.unresolved}.get(
            verdict, ""
        )


@dataclass(frozen=True, kw_only=True)
class Check(ABC):
    """What every check declares, whatever its scope.

    ``plain``: the claim in plain words (at most 20), as lists of claims and the summary show it;
    ``claim`` is its estimand and rule, stated once on the checks page; ``words``: what each verdict
    says in plain words; ``says``: each deciding part's claim in a few words (role -> words, e.g.
    "larger", "more so in early layers"), as the summary words a cell's parts.
    ``paper``: whether it is one of the paper's claims (else a question beyond it).
    ``headline``: the role of the part whose size a verdict-matrix cell and the summary print where
    the claim holds (None: the cell's first deciding part; ``rules.Finding.decided_by``).
    ``beside``: a part shown beside the sizes that decided the cells wherever the summary prints them
    (its role, and the words that name it), e.g. a remainder in another norm beside the norm that decides (None: none).
    ``lead``: the group of checks read together at the top of a book's first page (1 first); None:
    among the other claims after the verdict matrix.
    ``calibrated_by``: the simulated rules (``calibration.rule.Rule``) whose error rates are this
    check's; its stated rate is the largest of theirs (``stated_rates.check_rate``).
    ``figure``: a part shown as a forest plot on the check's chapters (None: the matrix only).
    ``chain``: where its parts are a total and the steps that add up to it, what the report draws of
    them (``Chain``; None: they are not).
    ``section``: what it shows in its own section of its chapters (``Section``; None: the matrix only).
    ``layer_split``: the contrast whose gap the gap chapter splits per layer (``LayerSplit``; None: none).
    ``battery``: what it declares for the battery that tests every check alike (``battery.Fixture``: its
    verdicts and the inputs where its claim is true, false, or lacks what it needs; or
    ``battery.NotInBattery`` with the reason it is left out; None: it declares nothing, which the
    battery refuses).
    ``reads``: the stored statistics its parts read per sample beyond the nuclear norm curves
    (a page that shows the check reads them, ``checks.statistics_read``).
    """

    scope: ClassVar[Scope]
    id: CheckId
    plain: str
    claim: str
    words: Words | None = None
    says: tuple[tuple[Role, str], ...] = ()
    paper: bool = False
    headline: Role | None = None
    beside: tuple[Role, str] | None = None
    lead: int | None = None
    chapters: tuple[str, ...]
    calibrated_by: tuple[Rule, ...]
    figure: PartFigure | None = None
    chain: Chain | None = None
    section: Section | None = None
    layer_split: LayerSplit | None = None
    battery: Battery | None = None
    reads: tuple[str, ...] = ()

    def part_words(self, role: Role) -> str:
        """What the claim says of a part of that role, in a few words ("" where it says nothing)."""
        return dict(self.says).get(role, "")

    @abstractmethod
    def run(self, inputs: Inputs) -> list[Finding]:
        """The check's findings on ``inputs``."""


ModelParts = Callable[[DatasetContext], "list[Part] | None"]  # None: a condition it needs is missing
ModelNote = Callable[[Sequence[DatasetContext]], "Note | None"]  # the contexts of the datasets computed
Unknown = Callable[[DatasetContext], "NotApplicable | None"]
PairParts = Callable[[CurveDraws, CurveDraws, str], "list[Part] | None"]  # instruct, base curves, dataset
WikiParts = Callable[[CurveDraws, "CurveDraws | None"], "list[Part] | None"]  # curves, reasoning reference
RunParts = Callable[[training_checks.ModelRuns, "str | None"], "list[Part] | NotApplicable | None"]


@dataclass(frozen=True, kw_only=True)
class PerModelCheck(Check):
    """A check of one model, per reasoning dataset and pooled per family.

    ``after_pooling``: what the check recomputes from a family's pooled parts (e.g. a share).
    ``adjust``: what the check changes in every finding's parts from the parts themselves, with a
    note (e.g. F2 deciding on the mean curve where None's log-scale spread changes).
    ``note``: a line under the check's numbers, from the contexts of the datasets whose parts it computed.
    ``gate``: why the check does not apply to a finding's parts, e.g. a precondition that is not
    established (then "not applicable" with that reason; None: it applies).
    ``unknown``: why the parts cannot be computed on a dataset's context where the conditions are
    stored but a statistic they read is not (then "not applicable" with that reason and the command that
    adds it to the context's store, instead of no cell; None: that is not why).
    """

    scope: ClassVar[Scope] = PER_MODEL
    parts: ModelParts
    after_pooling: Callable[[list[Part]], list[Part]] | None = None
    adjust: Adjust | None = None
    note: ModelNote | None = None
    gate: Gate | None = None
    unknown: Unknown | None = None

    def run(self, inputs: Inputs) -> list[Finding]:
        """Per reasoning dataset of every model, then pooled per family; a dataset whose parts need a
        statistic that is not stored (``unknown``) is a "not applicable" cell saying so."""
        out = []
        for model, cd in inputs.draws.items():
            by_dataset: dict[str, list[Part]] = {}
            computed: list[DatasetContext] = []
            unknown: dict[str, NotApplicable] = {}
            absent: dict[str, str] = {}
            for dataset in reasoning_datasets(cd):
                context = inputs.context(cd, dataset)
                parts = self.parts(context)
                if parts is not None:
                    by_dataset[dataset] = parts
                    computed.append(context)
                    continue
                reason = self.unknown(context) if self.unknown is not None else None
                unknown.update({dataset: reason} if reason is not None else {})
                absent[dataset] = reason.reason if reason is not None else LACKS_CONDITION
            note = self.note(computed) if self.note else None
            how = Pooling(self.after_pooling, self.adjust, self.gate)
            out += family_findings(self.id, model, by_dataset, note=note, how=how, absent=absent)
            out += _unknown_findings(self.id, model, unknown, by_dataset)
        return out


def _unknown_findings(check: CheckId, model: str, unknown: dict[str, NotApplicable], computed: dict) -> list[Finding]:
    """The "not applicable" cells of the datasets whose parts lack a stored statistic (``reason``), and
    of each family with two of them or more and no computed dataset."""
    out = [Finding(check, model, d, False, (), not_applicable=reason) for d, reason in unknown.items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = [d for d in unknown if vocabulary.family_of(d) == family]
        if len(members) >= 2 and not any(vocabulary.family_of(d) == family for d in computed):
            out.append(Finding(check, model, family, True, (), not_applicable=unknown[members[0]]))
    return out


@dataclass(frozen=True, kw_only=True)
class PairCheck(Check):
    """A check of an instruct model against its base model, per dataset and pooled per family
    (``adjust`` as for ``PerModelCheck``)."""

    scope: ClassVar[Scope] = PER_PAIR
    parts: PairParts
    adjust: Adjust | None = None

    def run(self, inputs: Inputs) -> list[Finding]:
        """Per dataset and family of every (instruct -> base) pair present; a pair that is not an
        instruct model with its own base (``is_own_base``) gets "not applicable" in every scope."""
        out = []
        for instruct, base in inputs.pairs.items():
            if instruct not in inputs.draws or base not in inputs.draws:
                continue
            by_dataset, absent = {}, {}
            for dataset in reasoning_datasets(inputs.draws[instruct]):
                parts = self.parts(inputs.draws[instruct], inputs.draws[base], dataset)
                if parts is not None:
                    by_dataset[dataset] = parts
                else:
                    absent[dataset] = LACKS_CONDITION
            base_note = Note(NoteKind.BASE_MODEL, f"base: {base}", (base,))
            how = Pooling(adjust=self.adjust)
            found = family_findings(self.id, instruct, by_dataset, note=base_note, how=how, absent=absent)
            if not is_own_base(instruct, base, inputs.declared):
                reason = not_applicable_reason(instruct, base)
                found = [replace(f, not_applicable=reason) for f in found]
            out += found
        return out


@dataclass(frozen=True, kw_only=True)
class WikiCheck(Check):
    """A check of one model's Wiki files, with the model's reasoning curves as reference."""

    scope: ClassVar[Scope] = WIKI_FILES
    parts: WikiParts

    def run(self, inputs: Inputs) -> list[Finding]:
        """One finding per model on the Wiki files (reasoning curves from ``reference`` when the
        model's own curves hold Wiki data only)."""
        out = []
        for model, cd in inputs.draws.items():
            parts = self.parts(cd, inputs.reference.get(model))
            if parts is not None:
                out.append(Finding(self.id, model, vocabulary.WIKI_DATASET, True, tuple(parts)))
        return out


@dataclass(frozen=True, kw_only=True)
class TrainingRunCheck(Check):
    """A check of one base model's fine-tuning runs, as a whole and per arm trained on; it reads
    ``inputs.extra[training_checks.TRAINING_RUNS]`` (``training_checks.per_training_run``)."""

    scope: ClassVar[Scope] = PER_TRAINING_RUN
    parts: RunParts

    def run(self, inputs: Inputs) -> list[Finding]:
        return training_checks.per_training_run(self, inputs)
