"""The sections of the page "Reproducibility", each returning the blocks it shows: the run and its
profile, the numbers behind the book, the models, the data files, the run times, how well the
intervals and verdicts work (the calibration tables), the package versions, the benchmarks and the
GPU check. What differs between a computed run and one of the original study's imported statistics
is decided here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import profiles
from analysis.checks import Check, rule_tables
from analysis.core import vocabulary
from analysis.core.cache import commit_tables, simulated_table
from analysis.findings import calibration, power_tested
from analysis.findings.bootstrap import pooled
from analysis.findings.calibration import scenarios
from analysis.findings.rules import DECIDED, SAME_MARGIN_PERCENT, UNRESOLVED, Finding, Outcome
from analysis.report import chain, coverage, gpu_check, provenance, voice
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.report.load import figure_note, origin_note
from analysis.report.notebook_parameters import optional_path
from analysis.report.page import Page
from analysis.store import runlog

CALIBRATION_REPS = 400  # simulated runs per rate on this page: a Monte Carlo standard error of about 0.8 points
NOTHING_COMPUTED = "Nothing was computed: the numbers are imported (the files are listed above)."


@dataclass
class Reproducibility:
    """The page's run: its parameters and rows, the run log, and the benchmark and export files given."""

    page: Page
    runs: list
    benchmarks: Path | None
    export: Path | None
    deciding: Path | None = None

    @classmethod
    def open(cls, notebook: str, given: dict | None = None) -> Reproducibility:
        """The page for its notebook's parameters (those of every page, the benchmarks file and the
        export file), checked like every page's."""
        page = Page.open(notebook, given, stats=())
        extra = page.params.extra
        return cls(
            page,
            runlog.read(page.params.results_dir),
            optional_path("benchmarks_file", extra["benchmarks_file"]),
            optional_path("export_file", extra["export_file"]),
            optional_path("deciding_dir", extra["deciding_dir"]),
        )

    @property
    def run(self):
        return self.runs[-1] if self.runs else None

    @cached_property
    def intro(self) -> Page:
        """The first page over this run's store, opened once for the sections that read its findings."""
        params = self.page.params
        data_dir = str(params.data_dir) if params.data_dir else None
        given = {"profile": params.profile.name, "results_dir": str(params.results_dir), "data_dir": data_dir}
        return Page.open("intro", given, stats=("nuclear_norm",))

    @property
    def imported(self) -> bool:
        """Whether the run's numbers are the original study's, imported: nothing was computed here."""
        return coverage.imported_profile(self.page.params.profile)

    @property
    def seed(self) -> int:
        return self.page.params.seed


def run(r: Reproducibility) -> Blocks:
    return [
        Markdown(provenance.run_sentence(r.runs, r.page.params.results_dir, r.imported)),
        fold(
            "The run's settings",
            [Table(provenance.profile_table(r.run), empty="The results directory has no run log.")],
        ),
    ]


def numbers(r: Reproducibility) -> Blocks:
    """Where the numbers behind the book are published, and whose they are."""
    params = r.page.params
    origin = origin_note(r.page.results.rows)
    return [
        Markdown(provenance.export_sentence(r.export, params.models, params.profile.name)),
        *([Markdown(f"*{origin}.*")] if origin else []),
    ]


def imports(r: Reproducibility) -> Blocks:
    return [Table(provenance.imports_table(r.runs), empty="")]


def models(r: Reproducibility) -> Blocks:
    """The models found in the store and what the run recorded of each."""
    rows = r.page.results.rows
    note = figure_note(r.page.results.models)
    facts_missing = (
        "No model was loaded: the numbers are the original study's, imported."
        if r.imported
        else "The run log records no model facts."
    )
    tables = [
        Table(provenance.models_used_table(rows, r.runs), empty="No results are stored.", by=None),
        Table(provenance.model_facts_table(r.run), empty=facts_missing, by=None),
    ]
    return [
        fold("Each model: its revision, attention and chat template", tables),
        *([Markdown(f"*{note}.*")] if note else []),
    ]


def data_check(r: Reproducibility) -> Blocks:
    """Whether each condition's file matches the sha256 published with the original study's data."""
    params = r.page.params
    return [Markdown(provenance.data_check_sentence(provenance.data_check_table(params.conditions, params.data_dir)))]


def data_check_files(r: Reproducibility) -> Blocks:
    """The data check per file."""
    params = r.page.params
    return [Table(provenance.data_check_shown(provenance.data_check_table(params.conditions, params.data_dir)))]


def run_times(r: Reproducibility) -> Blocks:
    return [
        fold("The run's times per stage", [Table(provenance.time_summary(r.runs), empty="No run times are recorded.")])
    ]


def extraction_times(r: Reproducibility) -> Blocks:
    """Each condition's extraction time."""
    empty = NOTHING_COMPUTED if r.imported else "No extraction was recorded."
    return [Table(provenance.extraction_time_table(r.runs), empty=empty)]


# The calibration tables: false "holds", coverage, the log-ratio choice, shares and power
# (``rule_rates``); the scenarios' misses (``misses``); false "holds" by skewness (``skewed``).
RULE_RATES: tuple[Callable[..., pd.DataFrame], ...] = (
    rule_tables.false_holds_table,
    calibration.coverage_table,
    calibration.log_ratio_coverage_table,
    calibration.share_table,
    calibration.power_table,
)
SIMULATED_TABLES = (*RULE_RATES, scenarios.miss_table, rule_tables.false_holds_by_skew, rule_tables.family_table)


def _simulated_frame(table: Callable[..., pd.DataFrame], seed: int) -> pd.DataFrame:
    """One simulated table at the page's runs (committed, cached or computed: ``simulated_table``)."""
    return simulated_table(table, reps=CALIBRATION_REPS, seed=seed)


def _simulated(table: Callable[..., pd.DataFrame], seed: int) -> Table:
    return Table(_simulated_frame(table, seed), by=None)


def rule_rates(r: Reproducibility) -> Blocks:
    """The calibration tables: false "holds", coverage, the log-ratio choice, shares and power."""
    titles = ('False "holds" per rule', "Coverage of the intervals", "The log-ratio choice", "Shares", "Power")
    return [fold(title, [_simulated(table, r.seed)]) for title, table in zip(titles, RULE_RATES)]


def misses(r: Reproducibility) -> Blocks:
    return [fold("Misses under hard noise", [_simulated(scenarios.miss_table, r.seed)])]


def skewed(r: Reproducibility) -> Blocks:
    return [fold('False "holds" by skewness', [_simulated(rule_tables.false_holds_by_skew, r.seed)])]


def commit_simulated_tables(*, seed: int = 0) -> list[Path]:
    """Every simulated table of the page at its runs and ``seed``, written into the repository
    (``cache.commit_tables``: ``make simulated-tables``)."""
    return commit_tables(SIMULATED_TABLES, reps=CALIBRATION_REPS, seed=seed)


def family_rates(r: Reproducibility) -> Blocks:
    """The family rules' error rates where a family's datasets differ (``calibration.family_table``),
    its repetitions said above the table rather than in a column, so that it fits the page."""
    table = _simulated_frame(rule_tables.family_table, r.seed)
    rules = "; ".join(f"{rule}: {checks}" for rule, checks in dict(zip(table["rule"], table["checks"])).items())
    said = Markdown(f"Each row: {CALIBRATION_REPS} simulated families. The checks each rule decides ({rules}).")
    return [fold("Families whose datasets differ", [said, Table(table.drop(columns=["reps", "checks"]), by=None)])]


def packages(r: Reproducibility) -> Blocks:
    return [fold("Package versions", [Table(provenance.package_table(r.run, runlog.package_versions()))])]


def benchmarks(r: Reproducibility) -> Blocks:
    """The extraction benchmark, where this run computed something and a results file is given."""
    if r.imported:
        empty = (
            "This run computed nothing (its numbers are the original study's, imported), so this project's "
            "extraction benchmark (`make benchmark`) does not describe it."
        )
        return [Markdown(empty)]
    table = provenance.benchmark_table(r.benchmarks) if r.benchmarks else None
    name = r.benchmarks.name if r.benchmarks else "none given"
    empty = f"No benchmark results file (`{name}`); `make benchmark` writes `benchmarks/results.json`."
    return [
        fold(
            "The extraction benchmark",
            [Table(part, empty=empty, by=None) for part in provenance.benchmark_parts(table)],
        )
    ]


def busy_core(r: Reproducibility) -> Blocks:
    """The run with one other process busy on one core, against an idle one-thread run."""
    if r.imported:
        return [Markdown("Not shown: this run computed nothing, as said above.")]
    table = provenance.busy_core_table(r.benchmarks) if r.benchmarks else None
    empty = "No one-core-busy rows in the benchmark results (`make benchmark` runs them with `--busy-core`)."
    return [fold("One core busy", [Table(table, empty=empty, by=None)])]


def gpu(r: Reproducibility) -> Blocks:
    """What ``make gpu-check`` measured, where its results lie beside the benchmarks."""
    results = gpu_check.results_path(r.benchmarks)
    return [
        Markdown(gpu_check.sentence(results)),
        fold("The GPU check's parts", [Table(gpu_check.table(results), empty="", by=None)]),
    ]


def resolution(r: Reproducibility) -> Blocks:
    """How much of the study this run resolves: of the cells that were tested (applicable, with
    enough instructions), how many hold or do not hold; and how many of the split's family steps are
    decided (``resolution_text``)."""
    page = r.intro
    if page.empty:
        return [Markdown("The store holds no cell to resolve.")]
    check = chain.chain_check(page.registry, among=page.checks())
    steps = family_steps(page.findings(), check) if check is not None else pd.DataFrame(columns=["decided"])
    goals = profiles.RESOLUTION_GOALS.get(r.page.params.profile.name)
    return [Markdown(resolution_text(page.findings(), steps, goals=goals, check=check))]


def family_steps(findings: Sequence[Finding], check: Check) -> pd.DataFrame:
    """The steps of a chain check's family cells in its first norm (``chain.table``'s lines)."""
    assert check.chain is not None
    frame = chain.table(findings, check)
    steps = {s.name for s in check.chain.steps}
    return frame[frame["pooled"] & (frame["norm"] == check.chain.norms[0][1]) & frame["step"].isin(steps)]


def resolution_text(
    findings: Sequence[Finding],
    families: pd.DataFrame,
    *,
    goals: profiles.ResolutionGoals | None = None,
    check: Check | None = None,
) -> str:
    """ "Of the 60 cells tested (...), 40 are resolved (67%): ...; the split decides 14 of its 16
    family steps." Tested: a check applicable, every dataset with enough instructions; resolved: any
    verdict but "not resolved", the cells and steps whose datasets disagree counted apart. ``families``:
    the family steps of the chain ``check`` (``family_steps``). Where the profile declares ``goals``,
    whether each is met."""
    tested = [f for f in findings if f.verdict in DECIDED]
    if not tested:
        return "No cell was tested: every cell lacks instructions or does not apply."
    resolved = [f for f in tested if f.verdict is not UNRESOLVED]
    text = (
        f"Of the {len(tested)} cells tested (a check that applies, every dataset with enough instructions; "
        f"{len(findings) - len(tested)} others are not applicable or have too few samples), {len(resolved)} "
        f"are resolved ({len(resolved) / len(tested):.0%}): {voice.verdict_counts(f.verdict for f in tested)}."
    )
    if not families.empty and check is not None and check.chain is not None:
        apart = int((families["outcome"] == Outcome.DISAGREE.value).sum()) if "outcome" in families else 0
        text += (
            f" The split of {check.chain.total_name} into {voice.number(len(check.chain.steps))} steps decides "
            f"{int(families['decided'].sum())} of its "
            f"{len(families)} family steps (every dataset's interval clears 0 the same way, or lies within "
            f"{SAME_MARGIN_PERCENT} of no change"
            + (f"; {apart} of them as datasets decided in opposite directions" if apart else "")
            + ")."
        )
    if goals is not None and check is not None:
        text += " " + goals_text(findings, check, goals)
    return text


def _matched_steps(check: Check) -> list:
    """The steps of a chain that read a loss-matched condition (the split's two new steps)."""
    assert check.chain is not None
    return [s for s in check.chain.steps if {s.fast, s.slow} & set(vocabulary.LOSS_MATCHED_SETTINGS)]


def goals_text(findings: Sequence[Finding], check: Check, goals: profiles.ResolutionGoals) -> str:
    """Whether the profile's goals are met, each with its count: the loss-matched steps' per-dataset
    intervals and each model's mean over its datasets within their half-widths, and the step at
    equal loss by design inside the regression's interval in enough cells."""
    assert check.chain is not None
    facet = check.chain.norms[0][0]
    steps = _matched_steps(check)
    mine = [f for f in findings if f.check == check.id and f.not_applicable is None]
    narrow, per_dataset, means_narrow, means = 0, 0, 0, 0
    for step in steps:
        for model in dict.fromkeys(f.model for f in mine):
            parts = [p for f in mine if f.model == model and not f.pooled if (p := f.part(step.role, facet=facet))]
            estimates = [p.estimate for p in parts if p.estimate is not None]
            for estimate in estimates:
                per_dataset += 1
                narrow += _half_width(estimate) < goals.step_half_width
            mean = pooled(estimates) if len(estimates) >= 2 else None
            if mean is not None:
                means += 1
                means_narrow += _half_width(mean) < goals.mean_half_width
    cells_, inside = chain.design_against_line(findings, check)
    names = " and ".join(s.name for s in steps)
    return (
        f"This profile's goals: every per-dataset interval of {names} narrower than "
        f"±{goals.step_half_width:.2f} ({narrow} of {per_dataset}; {_met(per_dataset > 0 and narrow == per_dataset)}); "
        f"each model's mean of each over its datasets narrower than ±{goals.mean_half_width:.2f} ({means_narrow} of "
        f"{means}; {_met(means > 0 and means_narrow == means)}); the step at equal loss by design inside the "
        f"regression's interval in at least {goals.design_inside:.0%} of the model and dataset cells ({inside} of "
        f"{cells_}; {_met(cells_ > 0 and inside >= goals.design_inside * cells_)})."
    )


def _half_width(estimate) -> float:
    low, high = estimate.interval()
    return (high - low) / 2 if np.isfinite(low) and np.isfinite(high) else float("inf")


def _met(met: bool) -> str:
    """ "met" or "not met"."""
    return "met" if met else "not met"


def power_statements(r: Reproducibility) -> Blocks:
    """This run's "about N would decide" tested against the deciding run (profile ``decide``): of the
    open cells for which this run names at most ``power_tested.LIMIT`` instructions per dataset, how
    many the deciding run decided, cell by cell."""
    if r.page.params.profile.name == "decide":
        return [Markdown("This is the deciding run: its own open cells say what would decide them.")]
    store = r.deciding
    if store is None or not (store / "run_log.json").exists():
        return [
            Markdown(
                "The deciding run's store is not here, so this run's power statements are not tested "
                "(`make book PROFILE=decide` makes it; this page then reads it)."
            )
        ]
    params = r.page.params
    data_dir = str(params.data_dir) if params.data_dir else None
    mine = r.intro.findings()
    theirs = Page.open(
        "intro", {"profile": "decide", "results_dir": str(store), "data_dir": data_dir}, stats=("nuclear_norm",)
    ).findings()
    table = power_tested.power_table(mine, theirs)
    stated = len(power_tested.stated_sizes(mine))
    left = power_tested.untested(mine, theirs)
    decided = int(table["decided"].sum()) if not table.empty else 0
    text = (
        f"This run says about {power_tested.LIMIT} instructions per dataset or fewer would decide "
        f"{voice.plural(stated, 'open cell')}; the deciding run holds {len(table)} of them "
        f"({left} are outside its datasets or checks) and decided {decided} of those."
    )
    return [
        Markdown(text),
        fold(
            "The statements tested, cell by cell",
            [Table(table.drop(columns="decided") if not table.empty else table, empty="No statement to test.")],
        ),
    ]
