"""``python -m analysis profile-data``: your own data file(s) through the study's lens, on one model.

Three steps, each doing only what the results store lacks:

1. extraction of the user's file(s) and of the reference conditions (None, Simplified and
   Detailed CoT of a few reasoning datasets, correct and irrelevant responses) on the model;
2. extraction of the user's file(s) on a randomly initialised copy of the model's architecture
   (stored as ``<model>@scratch``), the control that shows what of the profile comes from training;
3. execution of ``notebooks/your_data.py`` with papermill into a notebook (the book can include
   it) and its export to a standalone HTML page with the code hidden.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis import data, profiles, registry
from analysis.extract import models, runner
from analysis.settings import ExtractionSettings
from analysis.store import ResultsStore
from analysis.study import book

NOTEBOOK = "your_data"
DEFAULT_OUT = Path("results/your_data")
DEFAULT_SAMPLES = 20
# Reference samples per condition: 12 reference conditions of 10 instructions take a few minutes on
# a CPU (the Detailed-CoT ones most of it) and are computed once per results store.
DEFAULT_REFERENCE_SAMPLES = 10
DEFAULT_REFERENCE_DATASETS = profiles.REFERENCE_DATASETS
DEFAULT_SETTINGS = ExtractionSettings(n_samples=DEFAULT_SAMPLES)
# Cells papermill and the notebook hide: the parameters, the setup, and their code.
HIDDEN_CELL_TAGS = {"remove-cell", "parameters", "injected-parameters"}


@dataclass
class ProfileResult:
    """What one ``profile-data`` run did and where its outputs are."""

    results_dir: Path
    extraction: list[dict] = field(default_factory=list)
    notebook: Path | None = None
    html: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """One (model name, data spec) to extract: a user file or a reference condition."""

    model: str
    spec: str
    settings: ExtractionSettings  # its n_samples: a seeded random sample of the file (data.sample_ids; None: all)


def plan_jobs(
    model: str,
    files: Sequence[str],
    references: Sequence[str],
    store: ResultsStore,
    settings: ExtractionSettings,
    data_dir=None,
    scratch: bool = True,
    reference_samples: int | None = DEFAULT_REFERENCE_SAMPLES,
) -> list[Job]:
    """The (model, spec) pairs that still lack samples in the store: ``settings.n_samples`` of
    each user file (and of its scratch control), ``reference_samples`` of each reference condition."""
    reference = settings.but(n_samples=reference_samples)
    wanted = [Job(model, str(f), settings) for f in files] + [Job(model, r, reference) for r in references]
    if scratch:
        wanted += [Job(registry.scratch_name(model), str(f), settings) for f in files]
    return [
        job
        for job in wanted
        if runner.plan_run(job.model, settings.template, job.spec, store, job.settings, data_dir).todo
    ]


def extract(
    model: str,
    jobs: Sequence[Job],
    store: ResultsStore,
    settings: ExtractionSettings,
    data_dir=None,
    seed: int = 0,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Run the jobs: the model is loaded once, its scratch copy made once if a job needs it."""
    if not jobs:
        return []
    loaded = models.load(model, settings.template, settings.device)
    scratch = None
    records = []
    for job in jobs:
        if job.model != model and scratch is None:
            scratch = models.scratch_copy(loaded, seed)
        runs_on = loaded if job.model == model else scratch
        say(f"{job.model}: {job.spec}")
        summary = runner.extract(runs_on, job.spec, store, job.settings, data_dir, progress=progress)
        records.append({**summary.as_record(), "model": job.model})
    return records


def notebook_parameters(
    files: Sequence[Path],
    model: str,
    settings: ExtractionSettings,
    results_dir: Path,
    references: Sequence[str],
    seed: int,
    n_resamples: int,
) -> dict:
    """The papermill parameters of ``notebooks/your_data.py`` (absolute paths)."""
    return {
        "data_files": [str(Path(f).resolve()) for f in files],
        "model": model,
        "template": settings.template,
        "n_samples": settings.n_samples,
        "results_dir": str(Path(results_dir).resolve()),
        "reference_conditions": list(references),
        "max_length": settings.max_length,
        "seed": seed,
        "n_resamples": n_resamples,
    }


def export_html(notebook: Path, target: Path) -> Path:
    """A standalone HTML page of an executed notebook: outputs only, hidden cells left out."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    node = nbformat.read(notebook, as_version=4)
    remover = TagRemovePreprocessor(remove_cell_tags=HIDDEN_CELL_TAGS, enabled=True)
    node, _ = remover.preprocess(node, {})
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(node)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    return target


def run(
    model: str,
    data_files: Sequence[str],
    settings: ExtractionSettings = DEFAULT_SETTINGS,
    reference_datasets: Sequence[str] = DEFAULT_REFERENCE_DATASETS,
    reference_samples: int | None = DEFAULT_REFERENCE_SAMPLES,
    out=DEFAULT_OUT,
    html=None,
    notebook=None,
    data_dir=None,
    seed: int = 0,
    n_resamples: int = 1000,
    scratch: bool = True,
    progress: bool = True,
    root: Path = book.PROJECT_ROOT,
    say: Callable[[str], None] = print,
) -> ProfileResult:
    """Extract what the store lacks, execute the page and export it (see the module docstring).

    ``settings``: the extraction of the user's files (``n_samples`` of each); the reference
    conditions get ``reference_samples`` each. ``notebook`` default: ``<out>/your_data.ipynb``;
    ``html`` default: ``<out>/your_data.html``. Every file is validated before anything is computed.
    """
    from analysis.report.your_data import user_files

    started = time.perf_counter()
    files = [f.path for f in user_files(data_files, reference_datasets)]
    references = profiles.reference_conditions(tuple(reference_datasets))
    for spec in references:
        data.resolve(spec, data_dir)
    settings = settings.but(template=registry.resolve_template(model, settings.template))
    out = Path(out)
    store = ResultsStore(out)
    result = ProfileResult(out)
    jobs = plan_jobs(model, files, references, store, settings, data_dir, scratch, reference_samples)
    say(
        f"{model}: {len(jobs)} of {len(files) * (2 if scratch else 1) + len(references)} data sets to compute "
        f"({settings.n_samples or 'all'} samples of each file, {reference_samples or 'all'} of each reference), "
        f"into {out}"
    )
    with runner.torch_threads(settings.threads):
        result.extraction = extract(model, jobs, store, settings, data_dir, seed, progress, say)
    result.seconds["extraction"] = time.perf_counter() - started
    book.ensure_kernel()
    result.notebook = Path(notebook) if notebook else out / f"{NOTEBOOK}.ipynb"
    parameters = notebook_parameters(files, model, settings, out, references, seed, n_resamples)
    say(f"executing notebooks/{NOTEBOOK}.py -> {result.notebook}")
    result.seconds["notebook"] = book.execute_notebook(
        root / "notebooks" / f"{NOTEBOOK}.py", result.notebook, parameters, cwd=root
    )
    result.html = export_html(result.notebook, Path(html) if html else out / f"{NOTEBOOK}.html")
    result.seconds["total"] = time.perf_counter() - started
    return result
