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
from dataclasses import dataclass, field, replace
from pathlib import Path

from analysis import data, profiles
from analysis.core import registry
from analysis.core.settings import ExtractionSettings
from analysis.extract import models, runner
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
class ExtractionJob:
    """One (model name, data spec) to extract: a user file or a reference condition."""

    model: str
    spec: str
    settings: ExtractionSettings  # n_samples: a seeded random sample of the file (sample_draws.sample_ids; None: all)


@dataclass(frozen=True)
class ProfileData:
    """How ``run`` profiles the user's files: its arguments after the model and the files.

    ``settings``: the extraction of the user's files (``n_samples`` of each); the reference
    conditions (of ``reference_datasets``) get ``reference_samples`` each. ``notebook`` default:
    ``<out>/your_data.ipynb``; ``html`` default: ``<out>/your_data.html``. ``seed``: of the
    scratch model, the folds and the bootstrap; ``scratch``: extract the scratch control too.
    """

    settings: ExtractionSettings = DEFAULT_SETTINGS
    reference_datasets: Sequence[str] = DEFAULT_REFERENCE_DATASETS
    reference_samples: int | None = DEFAULT_REFERENCE_SAMPLES
    out: Path | str = DEFAULT_OUT
    html: Path | str | None = None
    notebook: Path | str | None = None
    data_dir: Path | str | None = None
    seed: int = 0
    n_resamples: int = 1000
    scratch: bool = True
    progress: bool = True
    root: Path = book.PROJECT_ROOT
    say: Callable[[str], None] = print


def plan_jobs(
    model: str, files: Sequence[Path | str], references: Sequence[str], store: ResultsStore, *, request: ProfileData
) -> list[ExtractionJob]:
    """The (model, spec) pairs that still lack samples in the store: ``settings.n_samples`` of
    each user file (and of its scratch control), ``reference_samples`` of each reference condition."""
    settings = request.settings
    template = registry.resolve_template(model, settings.template)
    reference = settings.but(n_samples=request.reference_samples)
    wanted = [ExtractionJob(model, str(f), settings) for f in files] + [
        ExtractionJob(model, r, reference) for r in references
    ]
    if request.scratch:
        wanted += [ExtractionJob(registry.scratch_name(model), str(f), settings) for f in files]
    return [
        job
        for job in wanted
        if runner.plan_run(job.model, template, job.spec, store, settings=job.settings, data_dir=request.data_dir).todo
    ]


def run_jobs(model: str, jobs: Sequence[ExtractionJob], store: ResultsStore, request: ProfileData) -> list[dict]:
    """Run the jobs: the model is loaded once, its scratch copy made once if a job needs it."""
    if not jobs:
        return []
    settings = request.settings
    loaded = models.load(model, template=settings.template, device=settings.device)
    scratch = None
    records = []
    for job in jobs:
        runs_on = loaded
        if job.model != model:
            if scratch is None:
                scratch = models.scratch_copy(loaded, request.seed)
            runs_on = scratch
        request.say(f"{job.model}: {job.spec}")
        summary = runner.extract(
            runs_on, job.spec, store, settings=job.settings, data_dir=request.data_dir, progress=request.progress
        )
        records.append({**summary.as_record(), "model": job.model})
    return records


def notebook_parameters(files: Sequence[Path], model: str, references: Sequence[str], request: ProfileData) -> dict:
    """The papermill parameters of ``notebooks/your_data.py`` (absolute paths)."""
    settings = request.settings
    return {
        "data_files": [str(Path(f).resolve()) for f in files],
        "model": model,
        "template": settings.template,
        "n_samples": settings.n_samples,
        "results_dir": str(Path(request.out).resolve()),
        "reference_conditions": list(references),
        "max_length": settings.max_length,
        "seed": request.seed,
        "n_resamples": request.n_resamples,
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
    *,
    reference_datasets: Sequence[str] = DEFAULT_REFERENCE_DATASETS,
    reference_samples: int | None = DEFAULT_REFERENCE_SAMPLES,
    out: Path | str = DEFAULT_OUT,
    html: Path | str | None = None,
    notebook: Path | str | None = None,
    data_dir: Path | str | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    scratch: bool = True,
    progress: bool = True,
    root: Path = book.PROJECT_ROOT,
    say: Callable[[str], None] = print,
) -> ProfileResult:
    """Extract what the store lacks, execute the page and export it (see the module docstring).

    The arguments after ``model`` and ``data_files`` are described at :class:`ProfileData`, which
    carries them to the steps. Every file is validated before anything is computed.
    """
    request = ProfileData(
        settings=settings,
        reference_datasets=reference_datasets,
        reference_samples=reference_samples,
        out=out,
        html=html,
        notebook=notebook,
        data_dir=data_dir,
        seed=seed,
        n_resamples=n_resamples,
        scratch=scratch,
        progress=progress,
        root=root,
        say=say,
    )
    return _profile(model, data_files, request)


def _profile(model: str, data_files: Sequence[str], request: ProfileData) -> ProfileResult:
    """``run`` with its arguments gathered."""
    from analysis.report.your_data_page import user_files

    started = time.perf_counter()
    files = [f.path for f in user_files(data_files, request.reference_datasets)]
    references = profiles.reference_conditions(tuple(request.reference_datasets))
    for spec in references:
        data.resolve(spec, request.data_dir)
    settings = request.settings.but(template=registry.resolve_template(model, request.settings.template))
    out = Path(request.out)
    request = replace(request, settings=settings, out=out)
    say = request.say
    store = ResultsStore(out)
    result = ProfileResult(out)
    jobs = plan_jobs(model, files, references, store, request=request)
    say(
        f"{model}: {len(jobs)} of {len(files) * (2 if request.scratch else 1) + len(references)} data sets to compute "
        f"({settings.n_samples or 'all'} samples of each file, {request.reference_samples or 'all'} of each "
        f"reference), into {out}"
    )
    with runner.torch_threads(settings.threads):
        result.extraction = run_jobs(model, jobs, store, request)
    result.seconds["extraction"] = time.perf_counter() - started
    book.ensure_kernel()
    result.notebook = Path(request.notebook) if request.notebook else out / f"{NOTEBOOK}.ipynb"
    parameters = notebook_parameters(files, model, references, request)
    say(f"executing notebooks/{NOTEBOOK}.py -> {result.notebook}")
    result.seconds["notebook"] = book.execute_notebook(
        request.root / "notebooks" / f"{NOTEBOOK}.py", result.notebook, parameters, cwd=request.root
    )
    result.html = export_html(result.notebook, Path(request.html) if request.html else out / f"{NOTEBOOK}.html")
    result.seconds["total"] = time.perf_counter() - started
    return result
