"""One command from data to book: extraction, notebook execution, book build.

``run_profile`` (``python -m analysis run --profile NAME``) does three things in order:

1. extraction: every (model, condition) of the profile into the results store, each model
   loaded once and only if some of its conditions still lack samples. Every notebook reads
   the same store, so nothing is computed twice, and a re-run computes only what is missing.
   A profile with a loss screen then screens each model's Detailed-CoT pairs for G1's matched
   pairs (``analysis.extract.screen``).
2. notebooks: each ``notebooks/<name>.py`` executed by papermill with the profile's parameters
   into ``book/notebooks/<name>.ipynb``, one after the other in this process (``analysis.study.book``).
3. book: ``jupyter-book build`` over the project's ``_config.yml`` and ``_toc.yml``, warnings
   as errors, HTML into ``book/_build/html`` (``analysis.study.book``).

A run log (``run_log.json`` in the results directory) records, per run, the profile, package
versions, the data files' sha256 status, each model's revision, attention implementation and
chat template hash, seconds per model and condition, and the phase times; the book's
reproducibility page shows it.
"""

from __future__ import annotations

import importlib.util
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from analysis import data, profiles
from analysis.core import registry
from analysis.core.errors import StudyError
from analysis.extract import models, runner, screen
from analysis.extract.threads import ThreadChoice
from analysis.profiles import Profile
from analysis.report.coverage import HUB_SOURCE
from analysis.store import ResultsStore, runlog
from analysis.store.store_files import export_parquet
from analysis.study import your_data_run
from analysis.study.book import (
    BOOK_EXPORT,
    NOTEBOOK_FOLDER,
    PROJECT_ROOT,
    NotebookRun,
    book_index,
    build_book,
    copy_book_sources,
    execute_notebooks,
)

# --------------------------------------------------------------------------- extraction


def data_status(conditions: Sequence[str], data_dir=None) -> list[dict]:
    """Each condition's data file located and hashed; a DataError before any compute if one is missing."""
    status = []
    for key in conditions:
        resolved = data.resolve(key, data_dir)
        status.append(
            {
                "condition": key,
                "file": resolved.condition.relative_path,
                "sha256": resolved.sha256,
                "sha256_ok": resolved.sha256_ok,
            }
        )
    return status


def pending_conditions(model: str, profile: Profile, store: ResultsStore, data_dir=None) -> list[str]:
    """The profile's conditions for which this model still has samples to compute."""
    template = registry.resolve_template(model, profile.extraction.template)
    return [
        spec
        for spec in profile.conditions
        if runner.plan_run(model, template, spec, store, settings=profile.extraction, data_dir=data_dir).todo
    ]


@dataclass(frozen=True)
class RunContext:
    """What every runner of a profile's source is given beside the profile: the results folder its
    statistics go into, the data folder, the run log (None: none kept), whether it shows progress,
    and where its lines go."""

    results_dir: Path
    data_dir: Path | None = None
    log: runlog.RunLog | None = None
    progress: bool = True
    say: Callable[[str], None] = print

    def record(
        self,
        *,
        extraction: Sequence[dict] = (),
        model_loads: Mapping[str, float] | None = None,
        models: Mapping[str, dict] | None = None,
    ) -> None:
        """Add to the run log, where one is kept, the records of conditions or training runs done,
        models' load seconds and models' facts (revision, attention, chat template hash)."""
        if self.log is None:
            return
        with self.log.changing() as record:
            record.extraction.extend(extraction)
            record.model_loads.update(model_loads or {})
            record.models.update(models or {})


def extract_profile(profile: Profile, context: RunContext) -> list[dict]:
    """Compute every (model, condition) of the profile that the store lacks; one record per pair."""
    with recorded_threads(profile, context):
        return _extract_models(profile, context)


@contextmanager
def recorded_threads(profile: Profile, context: RunContext) -> Iterator[ThreadChoice]:
    """torch's threads for the whole run (``runner.torch_threads``: the profile's number or the
    cores free now), chosen once, said and written to the run log."""
    with runner.torch_threads(profile.extraction.threads) as threads:
        if context.log is not None:
            with context.log.changing() as record:
                record.threads = threads.as_dict()
        context.say(f"torch threads: {threads.threads} ({threads.source})")
        yield threads


def _extract_models(profile: Profile, context: RunContext) -> list[dict]:
    store, data_dir, say = ResultsStore(context.results_dir), context.data_dir, context.say
    records = []
    screened = screen.screened_datasets(profile.conditions) if profile.extraction.loss_screen else ()
    for model in profile.models:
        todo = pending_conditions(model, profile, store, data_dir)
        template = registry.resolve_template(model, profile.extraction.template)
        to_screen = screen.pending(model, template, screened, store, settings=profile.extraction, data_dir=data_dir)
        if not todo and not to_screen:
            say(
                f"{model}: all {len(profile.conditions)} conditions already stored"
                + (" and screened" if screened else "")
            )
            continue
        say(
            f"{model}: {len(todo)} of {len(profile.conditions)} conditions to compute, {len(to_screen)} datasets to screen"
        )
        loaded = models.load(model, template=profile.extraction.template, device=profile.extraction.device)
        context.record(model_loads={model: loaded.load_seconds}, models={model: loaded.facts().as_dict()})
        for specs in runner.shared_passes(todo):
            summaries = runner.extract_together(
                loaded, specs, store, settings=profile.extraction, data_dir=data_dir, progress=context.progress
            )
            records += [summary.as_record() for summary in summaries]
            context.record(extraction=records[-len(summaries) :])
        screen.screen_model(
            loaded, to_screen, store, settings=profile.extraction, data_dir=data_dir, progress=context.progress, say=say
        )
        del loaded
    return records


def model_facts(model: str) -> dict:
    """A model's revision, attention implementation, chat template hash and transformers version,
    read from its config and tokenizer (the workers, not this process, load its weights)."""
    try:
        return models.describe(model).as_dict()
    except registry.ModelError as error:
        return {"error": str(error)}


def extract_with_ray(profile: Profile, context: RunContext) -> list[dict]:
    """Extraction spread over a Ray cluster by ``analysis.extract.distributed``: an embedded Ray on this
    machine, or the cluster that ``RAY_ADDRESS`` names (the report is printed with ``progress``;
    ``say``: the line that a profile's loss screen was not run)."""
    if importlib.util.find_spec("analysis.extract.distributed") is None:
        raise StudyError(
            "--executor ray needs the module analysis.extract.distributed, which this installation does not "
            "have; use --executor local"
        )
    from analysis.extract import distributed

    jobs = [(model, profile.extraction.template, spec) for model in profile.models for spec in profile.conditions]
    report = distributed.run_extraction(
        jobs, context.results_dir, profile.extraction, data_dir=context.data_dir, progress=context.progress
    )
    records = [summary.as_record() for summary in report.conditions]
    facts = {model: model_facts(model) for model in profile.models} if context.log is not None else None
    context.record(extraction=records, model_loads=report.load_seconds, models=facts)
    if not report.ok:
        raise StudyError(
            "some samples failed on the Ray workers; the notebooks were not executed:\n" + report.describe()
        )
    if profile.extraction.loss_screen:
        context.say(
            "the loss screen runs with the local executor only: not run (run again with --executor local to add it)"
        )
    return records


def check_imported(profile: Profile, context: RunContext) -> list[dict]:
    """A profile of imported statistics computes nothing: check that the store holds some for its models.

    No model is loaded; what the import lacks is reported by every page as missing.
    """
    results_dir = context.results_dir
    store = ResultsStore(results_dir)
    present = sorted(store.distinct("model", [("model", "in", list(profile.models)), ("origin", "!=", "")]))
    if not present:
        raise StudyError(
            f"{results_dir}: no imported statistics of the {profile.name} profile's models; import them first: "
            f"python -m analysis import-original {HUB_SOURCE} --out {results_dir} "
            "(or a folder or archive of the original study's files instead of the hub dataset)"
        )
    context.say(
        f"profile {profile.name}: imported statistics of {len(present)} of {len(profile.models)} models "
        f"({', '.join(present)}); nothing to compute"
    )
    return []


def train_profile(profile: Profile, context: RunContext) -> list[dict]:
    """Every training run of the profile that is not finished (``analysis.train.arms``); one record per run."""
    from analysis.train import arms

    training = profile.training
    if training is None:
        raise StudyError(f"profile {profile.name}: a training run needs the profile's training settings")
    with recorded_threads(profile, context) as threads:
        extraction = profile.extraction.but(threads=threads.threads)  # the choice recorded, kept for every run
        records = []
        for model in profile.models:
            done = arms.train_model(
                model,
                context.results_dir,
                settings=training,
                extraction=extraction,
                data_dir=context.data_dir,
                progress=context.progress,
                say=context.say,
            )
            records += [{**record, "computed": 0, "kind": "training"} for record in done]
            context.record(extraction=records[-len(done) :] if done else [])
    return records


# --------------------------------------------------------------------------- everything


def include_your_data(root: Path, book_root: Path, say: Callable[[str], None] = print) -> Path | None:
    """The your-data page that ``profile-data`` executed into its default results folder, copied
    into the book's chapters (None when there is none)."""
    source = root / your_data_run.DEFAULT_OUT / f"{your_data_run.NOTEBOOK}.ipynb"
    if not source.is_file():
        return None
    target = book_root / NOTEBOOK_FOLDER / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    say(f"the book includes the your-data page of {source.parent}")
    return target


@dataclass
class RunResult:
    """What ``run_profile`` did and where its outputs are."""

    profile: Profile
    results_dir: Path
    extraction: list[dict]
    notebooks: list[dict]
    book_index: Path | None
    seconds: float


def default_results_dir(profile: Profile, root: Path = PROJECT_ROOT) -> Path:
    """Where a profile's results go unless told otherwise: ``results/<profile>/``."""
    return root / "results" / profile.name


# --------------------------------------------------------------------------- sources


Runner = Callable[[Profile, RunContext], list[dict]]
"""Brings a profile's statistics into the store; one record per condition or training run."""

EXECUTORS = ("local", "ray")

RUNNERS: dict[str, Runner] = {
    "local": extract_profile,  # extraction in this process
    "ray": extract_with_ray,  # extraction spread over a Ray cluster
    "imported": check_imported,  # the original study's statistics, imported beforehand: nothing computed
    "training": train_profile,  # fine-tuning runs with their spectra along the way
}
"""The runner of a profile whose source is ``extract`` by ``--executor``; of every other source by
the source, whatever the executor."""


def source_runner(profile: Profile, executor: str) -> Runner:
    """The runner of the profile's source; an extraction profile's by its executor."""
    if executor not in EXECUTORS:
        raise StudyError(f"unknown executor {executor!r}; executors: {', '.join(EXECUTORS)}")
    return RUNNERS[profile.source if profile.source in RUNNERS else executor]


# --------------------------------------------------------------------------- the run


def run_profile(
    profile: Profile | str,
    results_dir=None,
    data_dir=None,
    *,
    executor: str = "local",
    book: bool = True,
    notebooks: Sequence[str] | None = None,
    book_root: Path | str | None = None,
    root: Path = PROJECT_ROOT,
    progress: bool = True,
    strict: bool = True,
    threads: int | None = None,
    retry_out_of_memory: bool = False,
    say: Callable[[str], None] = print,
) -> RunResult:
    """Run the study under a profile: extraction, notebooks, book (see the module docstring).

    ``executor``: ``local`` or ``ray`` (an extraction profile's). ``notebooks``: those executed
    (None: the profile's). ``book_root``: where the executed notebooks and
    the built book go (default: the project itself); another folder receives a copy of the book
    sources first, so a test can build a book without touching the project's. ``book=False`` stops
    after the extraction. ``threads`` overrides the profile's torch CPU threads;
    ``retry_out_of_memory`` computes again the samples stored as skipped for lack of memory;
    ``strict``: the book's build fails on a warning; ``say``: where lines go.
    """
    profile = with_overrides(
        profiles.get_profile(profile) if isinstance(profile, str) else profile,
        threads=threads,
        retry_out_of_memory=retry_out_of_memory,
    )
    runner_of_source = source_runner(profile, executor)
    root = Path(root).resolve()
    results = Path(results_dir) if results_dir else default_results_dir(profile, root)
    results.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with recorded_run(profile, results, data_dir, executor=executor, say=say) as log:
        say(
            f"profile {profile.name}: {len(profile.models)} models x {len(profile.conditions)} conditions, "
            f"{profile.extraction.n_samples or 'all'} samples each, results in {results}"
        )
        extraction = runner_of_source(profile, RunContext(results, data_dir, log, progress=progress, say=say))
        with log.changing() as record:
            record.extraction_seconds = time.perf_counter() - started
        executed, index = (
            run_book(
                profile,
                results,
                data_dir=data_dir,
                log=log,
                root=root,
                book_root=book_root,
                notebooks=notebooks,
                strict=strict,
                say=say,
            )
            if book
            else ([], None)
        )
    return RunResult(profile, results, extraction, executed, index, log.record.elapsed())  # the wall time recorded


def with_overrides(profile: Profile, *, threads: int | None, retry_out_of_memory: bool) -> Profile:
    """The profile with the run's thread count and out-of-memory retry, where given."""
    if threads is None and not retry_out_of_memory:
        return profile
    extraction = profile.extraction.but(
        threads=threads or profile.extraction.threads, retry_out_of_memory=retry_out_of_memory
    )
    return replace(profile, extraction=extraction)


def recorded_run(
    profile: Profile, results: Path, data_dir, *, executor: str, say: Callable[[str], None]
) -> AbstractContextManager[runlog.RunLog]:
    """The run's log (``runlog.recording``) with the data files' status; a warning for files whose sha256 differs."""
    status = data_status(profile.conditions, data_dir)
    mismatched = [s["file"] for s in status if s["sha256_ok"] is False]
    if mismatched:
        say(
            f"warning: {len(mismatched)} data files differ from their published sha256 (recorded in the run log): "
            + ", ".join(sorted(set(mismatched))[:5])
        )
    return runlog.recording(results.resolve(), profile.as_dict(), executor=executor, data_status=status)


def run_book(
    profile: Profile,
    results: Path,
    *,
    data_dir,
    log: runlog.RunLog,
    root: Path,
    book_root: Path | str | None,
    notebooks: Sequence[str] | None,
    strict: bool,
    say: Callable[[str], None],
) -> tuple[list[dict], Path]:
    """The notebooks executed over the store and the book built; the notebooks' records and the book's
    index (``root``: the project, resolved)."""
    target = Path(book_root).resolve() if book_root else root
    if target != root:
        copy_book_sources(root, target)
    (target / BOOK_EXPORT).parent.mkdir(parents=True, exist_ok=True)
    if export_parquet(results, target / BOOK_EXPORT) is None:
        (target / BOOK_EXPORT).unlink(missing_ok=True)
    notebooks_started = time.perf_counter()
    executed = execute_notebooks(
        NotebookRun(profile, results, target, data_dir, root, notebooks or profile.notebooks()),
        on_done=log.add_notebook,
        say=say,
    )
    with log.changing() as record:
        record.notebooks_seconds = time.perf_counter() - notebooks_started
    include_your_data(root, target, say)
    say("building the book")
    seconds = build_book(target, strict=strict, say=say, only=profile.notebooks(), run=log.record)
    index = book_index(target)
    with log.changing() as record:
        record.book = {"seconds": seconds, "index": str(index)}
    return executed, index
