"""One book page's data in one call: checked parameters, stored rows, bootstrap curves, findings.

Every book page starts with ``page = Page.open("<notebook>", given_parameters(...))`` and then
only shows what the page's attributes and the ``report`` modules return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd

from analysis import data
from analysis.checks import (
    REGISTRY,
    STORE,
    Registry,
    Scope,
    on_chapter,
    run_checks,
    statistics_read,
)
from analysis.core import vocabulary
from analysis.findings.bootstrap import CurveDraws, all_curve_draws
from analysis.findings.pooling import model_pairs
from analysis.findings.rules import Finding
from analysis.report import coverage, curve_tables, figures, notebook_parameters
from analysis.report.load import (
    StudyResults,
    figure_note,
    imported_models,
    load_results,
    origin_note,
    require_store_rows,
)

FIGURE_STATS = ("nuclear_norm", "sigma1_ratio", "effective_rank")


class ChecksPage(Protocol):
    """What every page that shows checks offers the sections (``Page``, the training page): the checks
    its chapter shows, their findings, its models and sample count, and the caveat under its figures."""

    registry: Registry

    def checks(self, scope: Scope | None = None) -> tuple[str, ...]: ...

    def findings(self, checks: Sequence[str] | None = None) -> list[Finding]: ...

    @property
    def models(self) -> tuple[str, ...]: ...

    @property
    def n_samples(self) -> int | None: ...

    @property
    def imported(self) -> bool: ...

    @property
    def empty(self) -> bool: ...

    @property
    def pairs(self) -> dict[str, str]: ...

    def note(self) -> str | None: ...

    def reported(self) -> pd.DataFrame: ...

    def scope(self) -> str | None: ...


@dataclass
class Page:
    """What a page reads and what every section of it is computed from."""

    params: notebook_parameters.NotebookParameters
    results: StudyResults
    draws: dict[str, CurveDraws]
    curves: pd.DataFrame
    bands: pd.DataFrame
    identical: dict[str, frozenset] = field(default_factory=dict)
    reference: dict[str, CurveDraws] = field(default_factory=dict)
    registry: Registry = REGISTRY  # the checks the page may show
    _found: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        notebook: str,
        given: dict | None = None,
        stats: Sequence[str] = FIGURE_STATS,
        registry: Registry = REGISTRY,
    ) -> Page:
        """Check the page's parameters (``given``: name -> value), read the run's rows from the store
        and bootstrap every curve of ``stats`` (none: the page shows no curves); the curve statistics
        that the page does not show stay on disk. ``registry``: the checks the page may show."""
        params = notebook_parameters.validate(notebook, given)
        chapter_checks = on_chapter(notebook, registry=registry)
        per_sample: Sequence[str] = statistics_read(chapter_checks, registry)  # what the chapter's checks read
        results = load_results(
            params.results_dir,
            params.models,
            params.conditions,
            max_length=params.max_length,
            n_samples=params.n_samples,
            data_dir=params.data_dir,
            unread=[s for s in FIGURE_STATS if s not in stats],
            read=per_sample,
        )
        if results.rows.empty:  # the page says what is absent and how to bring it; an empty store stops
            require_store_rows(params.results_dir, params.models, _store_command(params))
        stats = [s for s in stats if s in results.rows]  # a statistic no stored row holds is left on disk
        per_sample = [s for s in per_sample if s in results.rows and s not in stats]
        draws = (
            all_curve_draws(
                results.rows,
                results.models,
                stats,
                n_resamples=params.n_resamples,
                seed=params.seed,
                sample_stats=per_sample,
                screened=results.screened,
                screens=results.screens,
            )
            if stats and len(results.rows)
            else {}
        )
        curves, bands = figures.curves_and_bands(draws)
        identical = {
            d: data.identical_response_ids(d, "none", params.data_dir)
            for d in results.rows["dataset"].unique()
            if d != vocabulary.WIKI_DATASET
        }
        page = cls(params, results, draws, curves, bands, identical, registry=registry)
        page.reference = page._f5_reference()
        return page

    def _f5_reference(self) -> dict[str, CurveDraws]:
        """Reasoning curves (Simplified and Detailed CoT) for F5 when this page holds Wiki data only."""
        rows = self.results.rows
        if rows.empty or not (rows["dataset"] == vocabulary.WIKI_DATASET).any():
            return {}
        if (rows["dataset"] != vocabulary.WIKI_DATASET).any():
            return self.draws
        reasoning = [*vocabulary.MATH_REASONING, *vocabulary.COMMONSENSE_REASONING]
        keys = [
            c.key
            for c in data.conditions_matching(
                datasets=reasoning, settings=("simplified", "detailed"), responses=(vocabulary.CORRECT,)
            )
        ]
        reference = load_results(
            self.params.results_dir,
            self.results.models,
            keys,
            max_length=self.params.max_length,
            n_samples=self.params.n_samples,
            data_dir=self.params.data_dir,
        )
        if reference.rows.empty:
            return {}
        return all_curve_draws(
            reference.rows,
            reference.models,
            ("nuclear_norm",),
            n_resamples=self.params.n_resamples,
            seed=self.params.seed,
        )

    @property
    def empty(self) -> bool:
        """Whether the store holds nothing of this page (the page then says what is absent, and only that)."""
        return self.results.rows.empty

    @property
    def models(self) -> tuple[str, ...]:
        return self.results.models

    @property
    def pairs(self) -> dict[str, str]:
        """instruct -> base model pairs among the page's models."""
        return model_pairs(self.results.models, self.results.templates)

    @property
    def chapter(self) -> str:
        return self.params.notebook

    def checks(self, scope: Scope | None = None) -> tuple[str, ...]:
        """The checks of the page's registry that its chapter shows (of one scope, if given)."""
        return on_chapter(self.chapter, scope, self.registry)

    def findings(self, checks: Sequence[str] | None = None) -> list[Finding]:
        """Every check in ``checks`` (None: the chapter's) that the page's data cover, per dataset
        and pooled per family (``checks.run_checks``), computed once per set of checks."""
        key = tuple(self.checks() if checks is None else checks)
        if key not in self._found:
            self._found[key] = run_checks(
                self.draws,
                key,
                identical=self.identical,
                data_dir=str(data.data_dir(self.params.data_dir)),
                reference=self.reference,
                pairs=self.pairs,
                registry=self.registry,
                extra={STORE: str(self.params.results_dir)},
            )
        return self._found[key]

    @property
    def n_samples(self) -> int | None:
        return self.params.n_samples

    @property
    def imported(self) -> bool:
        """Whether some of the page's rows are the original study's imported statistics."""
        return bool(imported_models(self.results.rows))

    def note(self) -> str | None:
        """The offline-model caveat printed under every figure, with the sample count."""
        return figure_note(self.results.models, self.params.n_samples)

    def reported(self) -> pd.DataFrame:
        """The paper's reported numbers this store can be set against (``curve_tables.reported_mad_comparison``)."""
        return curve_tables.reported_mad_comparison(self.draws)

    def scope(self) -> str | None:
        """The summary's scope paragraph where the page words its own (None: the reproduction's)."""
        return None

    def coverage(self) -> str:
        """Markdown: what the page reads, what is missing or skipped, and the instructions left out of
        correct-vs-irrelevant comparisons (the caveats of its models: ``sections.provenance``)."""
        p = self.params
        text = coverage.coverage_text(self.results, p.profile, p.results_dir, p.models, chapter=self.chapter)
        left_out = self.identical_in_store()
        if left_out:
            listed = ", ".join(f"{d} {n}" for d, n in left_out.items())
            text += (
                f"\n\nNone-CoT instructions whose irrelevant answer is the same text as the correct one, "
                f"left out of every correct-vs-irrelevant comparison: {listed}."
            )
        return text

    def origin(self) -> str | None:
        """Whose numbers these are when some models' rows are the original study's imported statistics."""
        return origin_note(self.results.rows)

    def identical_in_store(self) -> dict[str, int]:
        """Per dataset, the stored None-CoT instructions whose irrelevant answer equals the correct one."""
        rows = self.results.rows
        none = rows[rows["setting"] == "none"]
        counts = {}
        for dataset, ids in self.identical.items():
            stored = set(none.loc[none["dataset"] == dataset, "sample_index"].unique())
            if stored & ids:
                counts[dataset] = len(stored & ids)
        return counts


def _store_command(params: notebook_parameters.NotebookParameters) -> str:
    """The command that fills an empty store for this run: every model and condition of the profile."""
    profile = params.profile
    return coverage.bring_command(profile, params.results_dir, profile.models, profile.conditions)
