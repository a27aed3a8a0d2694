"""One command from data to book: extraction, notebook execution, book build.

``run_profile`` (``python -m analysis run --profile NAME``) does three things in order:

1. extraction: every (model, condition) of the profile into the results store, each model
   loaded once and only if some of its conditions still lack samples. Every notebook reads
   the same store, so nothing is computed twice, and a re-run computes only what is missing.
2. notebooks: each ``notebooks/<name>.py`` (jupytext percent format) is converted to a
   notebook and executed by papermill with the profile's parameters into
   ``book/notebooks/<name>.ipynb``, one after the other in this process.
3. book: ``jupyter-book build`` over the project's ``_config.yml`` and ``_toc.yml``, warnings
   as errors, HTML into ``book/_build/html``.

A run log (``run_log.json`` in the results directory) records, per run, the profile, package
versions, the data files' sha256 status, each model's revision, attention implementation and
chat template hash, seconds per model and condition, and the phase times; the book's
reproducibility page shows it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from analysis import data, models, profiles, runlog
from analysis.profiles import Profile
from analysis.store import ResultsStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "python3"
BOOK_SOURCES = ("_config.yml", "_toc.yml", "book")
RECORDED_PACKAGES = (
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "matplotlib",
    "seaborn",
    "gguf",
    "safetensors",
    "papermill",
    "jupytext",
    "jupyter-book",
    "layer-gradient-study",
)
EXECUTORS = ("local", "ray")


class PipelineError(RuntimeError):
    """A phase of the pipeline that cannot run or did not succeed."""


# --------------------------------------------------------------------------- run log


def package_versions(names: Sequence[str] = RECORDED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape the results ("not installed" if absent)."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@dataclass
class RunLog:
    """The record of the run in progress, saved to the results directory's run log after every step."""

    results_dir: Path
    record: runlog.RunRecord

    def save(self) -> None:
        runlog.save(self.results_dir, self.record)


def start_run_log(profile: Profile, results_dir: Path, executor: str, data_status: list[dict]) -> RunLog:
    """A new run record with the profile, the environment and the data files' sha256 status."""
    return RunLog(results_dir, runlog.RunRecord.start(profile.as_dict(), executor, package_versions(), data_status))


def read_run_log(results_dir) -> list[runlog.RunRecord]:
    """Every run recorded in a results directory (``runlog.read``)."""
    return runlog.read(results_dir)


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
    from analysis import runner  # not at import time: the book's pages import this module for its run log

    template = models.resolve_template(model, None)
    return [
        spec
        for spec in profile.conditions
        if runner.plan_run(model, template, spec, store, profile.n_samples, profile.max_length, data_dir).todo
    ]


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run with this many torch CPU threads (None: unchanged), restoring the previous number.

    On a machine whose cores are busy with other work, one thread can be many times faster than
    several: threads that wait for each other at every operation lose their turn on the CPU.
    """
    if not threads:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def extract_profile(
    profile: Profile,
    results_dir: Path,
    data_dir=None,
    log: RunLog | None = None,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Compute every (model, condition) of the profile that the store lacks; one record per pair."""
    with torch_threads(profile.threads):
        return _extract_models(profile, results_dir, data_dir, log, progress, say)


def _extract_models(
    profile: Profile, results_dir: Path, data_dir, log: RunLog | None, progress: bool, say: Callable[[str], None]
) -> list[dict]:
    from analysis import runner

    store = ResultsStore(results_dir)
    records = []
    for model in profile.models:
        todo = pending_conditions(model, profile, store, data_dir)
        if not todo:
            say(f"{model}: all {len(profile.conditions)} conditions already stored")
            continue
        say(f"{model}: {len(todo)} of {len(profile.conditions)} conditions to compute")
        loaded = models.load(model, device=profile.device)
        if log is not None:
            log.record.model_loads[model] = loaded.load_seconds
            log.record.models[model] = loaded.facts().as_dict()
        for spec in todo:
            summary = runner.extract(
                loaded,
                spec,
                store,
                limit=profile.n_samples,
                max_length=profile.max_length,
                batch_size=profile.batch_size,
                token_budget=profile.token_budget,
                data_directory=data_dir,
                progress=progress,
            )
            record = {
                "model": model,
                "condition": spec,
                "requested": summary.requested,
                "already_done": summary.already_done,
                "computed": summary.computed,
                "skipped": summary.skipped,
                "seconds": summary.seconds,
            }
            records.append(record)
            if log is not None:
                log.record.extraction.append(record)
                log.save()
        del loaded
    return records


def model_facts(model: str) -> dict:
    """A model's revision, attention implementation, chat template hash and transformers version,
    read from its config and tokenizer (the workers, not this process, load its weights)."""
    try:
        return models.describe(model).as_dict()
    except models.ModelError as error:
        return {"error": str(error)}


def extract_with_ray(
    profile: Profile, results_dir: Path, data_dir=None, log: RunLog | None = None, progress: bool = True
) -> list[dict]:
    """Extraction spread over a Ray cluster by ``analysis.distributed``: an embedded Ray on this
    machine, or the cluster that ``RAY_ADDRESS`` names."""
    if importlib.util.find_spec("analysis.distributed") is None:
        raise PipelineError(
            "--executor ray needs the module analysis.distributed, which this installation does not "
            "have; use --executor local"
        )
    from analysis import distributed

    jobs = [(model, None, spec) for model in profile.models for spec in profile.conditions]
    report = distributed.run_extraction(
        jobs,
        results_dir,
        limit=profile.n_samples,
        max_length=profile.max_length,
        batch_size=profile.batch_size,
        token_budget=profile.token_budget,
        data_dir=data_dir,
        device=profile.device,
        progress=progress,
    )
    records = [
        {
            "model": s.model,
            "condition": s.condition,
            "requested": s.requested,
            "already_done": s.already_done,
            "computed": s.computed,
            "skipped": s.skipped,
            "seconds": s.seconds,
        }
        for s in report.conditions
    ]
    if log is not None:
        log.record.extraction = records
        log.record.model_loads = dict(report.load_seconds)
        log.record.models = {model: model_facts(model) for model in profile.models}
        log.save()
    if not report.ok:
        raise PipelineError(
            "some samples failed on the Ray workers; the notebooks were not executed:\n" + report.describe()
        )
    return records


# --------------------------------------------------------------------------- notebooks


def ensure_kernel(name: str = KERNEL_NAME) -> None:
    """Register this environment's Python as a Jupyter kernel if no kernel of that name exists."""
    from jupyter_client.kernelspec import KernelSpecManager

    if name in KernelSpecManager().find_kernel_specs():
        return
    command = [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", name]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise PipelineError(f"cannot register the Jupyter kernel {name!r}: {done.stderr.strip().splitlines()[-1:]}")


def notebook_parameters(
    notebook: str, profile: Profile, results_dir: Path, data_dir=None, root: Path = PROJECT_ROOT
) -> dict:
    """The papermill parameters of one notebook under a profile (absolute paths)."""
    parameters = {
        "models": list(profile.models),
        "conditions": list(profile.conditions_for(notebook)),
        "n_samples": profile.n_samples,
        "max_length": profile.max_length,
        "results_dir": str(Path(results_dir).resolve()),
        "data_dir": str(Path(data_dir).resolve()) if data_dir else None,
        "seed": profile.seed,
        "n_resamples": profile.n_resamples,
    }
    if notebook in ("intro", "summary"):
        parameters["profile"] = profile.name
    if notebook == "reproducibility":
        parameters["benchmarks_file"] = str((root / "benchmarks" / "results.json").resolve())
    return parameters


def text_notebook_to_ipynb(source: Path, target: Path) -> Path:
    """Convert a jupytext percent-format notebook to .ipynb with the kernel papermill will use."""
    import jupytext

    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    notebook.metadata.pop("jupytext", None)
    jupytext.write(notebook, target, fmt="ipynb")
    return target


KERNEL_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def single_threaded_kernels() -> Iterator[None]:
    """Start kernels with one BLAS/OpenMP thread unless the environment says otherwise: the
    notebooks' linear algebra is small, and extra threads only contend on a busy machine."""
    added = [name for name in KERNEL_THREAD_VARIABLES if name not in os.environ]
    os.environ.update({name: "1" for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def execute_notebook(source: Path, output: Path, parameters: dict, cwd: Path = PROJECT_ROOT) -> float:
    """Execute one text notebook with papermill into ``output``; seconds taken.

    A failing cell stops the notebook; the partly executed notebook is kept at ``output`` and
    the error names its cell.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="notebook-") as scratch, single_threaded_kernels():
        ipynb = text_notebook_to_ipynb(source, Path(scratch) / f"{source.stem}.ipynb")
        try:
            papermill.execute_notebook(
                str(ipynb),
                str(output),
                parameters=parameters,
                kernel_name=KERNEL_NAME,
                language="python",
                cwd=str(cwd),
                progress_bar=False,
            )
        except PapermillExecutionError as error:
            raise PipelineError(
                f"{source}: cell {error.exec_count} failed: {error.ename}: {error.evalue} "
                f"(the executed notebook is at {output})"
            ) from None
    fold_code(output)
    return time.perf_counter() - started


def fold_code(path: Path) -> None:
    """Tag every code cell of an executed notebook that carries no display tag ``remove-input``:
    the book shows results, and the code that made them is in the notebook files."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            if not {"hide-input", "remove-input", "remove-cell"} & set(tags):
                tags.append("remove-input")
    nbformat.write(notebook, path)


def notebook_sources(root: Path = PROJECT_ROOT, names: Sequence[str] | None = None) -> list[Path]:
    """The text notebooks to execute, in book order (by default every ``notebooks/*.py`` but the
    standalone ones, which their own command runs)."""
    directory = root / "notebooks"
    found = {p.stem: p for p in directory.glob("*.py")}
    wanted = (
        list(names)
        if names
        else [n for n in profiles.NOTEBOOKS if n in found]
        + sorted(set(found) - set(profiles.NOTEBOOKS) - set(profiles.STANDALONE_NOTEBOOKS))
    )
    missing = [n for n in wanted if n not in found]
    if missing:
        raise PipelineError(f"{directory}: no notebook {', '.join(missing)} (found: {', '.join(sorted(found))})")
    return [found[n] for n in wanted]


def execute_notebooks(
    profile: Profile,
    results_dir: Path,
    book_root: Path,
    data_dir=None,
    root: Path = PROJECT_ROOT,
    names: Sequence[str] | None = None,
    log: RunLog | None = None,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Execute the notebooks into ``book_root/book/notebooks``; one record per notebook."""
    ensure_kernel()
    records = []
    for source in notebook_sources(root, names):
        output = book_root / "book" / "notebooks" / f"{source.stem}.ipynb"
        parameters = notebook_parameters(source.stem, profile, results_dir, data_dir, root)
        say(f"executing {source.relative_to(root)} -> {output}")
        seconds = execute_notebook(source, output, parameters, cwd=root)
        record = {"notebook": source.stem, "seconds": seconds, "output": str(output)}
        records.append(record)
        if log is not None:
            log.record.notebooks.append(record)
            log.save()
    return records


# --------------------------------------------------------------------------- book


def jupyter_book_command() -> str:
    """The jupyter-book executable of this environment."""
    beside = Path(sys.executable).with_name("jupyter-book")
    found = str(beside) if beside.is_file() else shutil.which("jupyter-book")
    if not found:
        raise PipelineError(
            "jupyter-book is not installed in this environment: pip install 'jupyter-book>=1.0.4.post1,<2'"
        )
    return found


def copy_book_sources(root: Path, book_root: Path) -> None:
    """Copy the book's configuration and pages to another folder, to build it there."""
    for name in BOOK_SOURCES:
        source, target = root / name, book_root / name
        if source.is_dir():
            shutil.copytree(
                source,
                target,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("_build", "notebooks", ".ipynb_checkpoints"),
            )
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def build_book(book_root: Path, strict: bool = True) -> float:
    """``jupyter-book build`` of ``book_root`` into ``book_root/book/_build/html``; seconds taken.

    ``strict`` turns warnings (a missing figure, a broken reference) into a failed build.
    """
    command = [
        jupyter_book_command(),
        "build",
        str(book_root),
        "--path-output",
        str(book_root / "book"),
        "--builder",
        "html",
    ]
    if strict:
        command += ["-W", "-n", "--keep-going"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=book_root, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise PipelineError(f"jupyter-book build failed (exit {done.returncode}):\n{tail}")
    return time.perf_counter() - started


def book_index(book_root: Path = PROJECT_ROOT) -> Path:
    """The built book's front page."""
    return book_root / "book" / "_build" / "html" / "index.html"


# --------------------------------------------------------------------------- everything


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


def run_profile(
    profile: Profile | str,
    results_dir=None,
    data_dir=None,
    executor: str = "local",
    book: bool = True,
    notebooks: Sequence[str] | None = None,
    book_root=None,
    root: Path = PROJECT_ROOT,
    progress: bool = True,
    strict: bool = True,
    threads: int | None = None,
    say: Callable[[str], None] = print,
) -> RunResult:
    """Run the study under a profile: extraction, notebooks, book (see the module docstring).

    ``book_root``: where the executed notebooks and the built book go (default: the project
    itself); another folder receives a copy of the book sources first, so a test can build a
    book without touching the project's. ``book=False`` stops after the extraction.
    ``threads`` overrides the profile's torch CPU threads.
    """
    profile = profiles.get_profile(profile) if isinstance(profile, str) else profile
    if threads is not None:
        profile = replace(profile, threads=threads)
    if executor not in EXECUTORS:
        raise PipelineError(f"unknown executor {executor!r}; executors: {', '.join(EXECUTORS)}")
    root = Path(root).resolve()
    results = Path(results_dir) if results_dir else default_results_dir(profile, root)
    results.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    status = data_status(profile.conditions, data_dir)
    mismatched = [s["file"] for s in status if s["sha256_ok"] is False]
    if mismatched:
        say(
            f"warning: {len(mismatched)} data files differ from their published sha256 (recorded in the run log): "
            + ", ".join(sorted(set(mismatched))[:5])
        )
    log = start_run_log(profile, results.resolve(), executor, status)
    log.save()

    say(
        f"profile {profile.name}: {len(profile.models)} models x {len(profile.conditions)} conditions, "
        f"{profile.n_samples or 'all'} samples each, results in {results}"
    )
    if executor == "ray":
        extraction = extract_with_ray(profile, results, data_dir, log, progress)
    else:
        extraction = extract_profile(profile, results, data_dir, log, progress, say)
    log.record.extraction_seconds = time.perf_counter() - started
    log.record.wall_seconds = log.record.extraction_seconds
    log.save()

    executed: list[dict] = []
    index = None
    if book:
        target = Path(book_root).resolve() if book_root else root
        if target != root:
            copy_book_sources(root, target)
        notebooks_started = time.perf_counter()
        executed = execute_notebooks(profile, results, target, data_dir, root, notebooks, log, say)
        log.record.notebooks_seconds = time.perf_counter() - notebooks_started
        log.record.wall_seconds = time.perf_counter() - started
        log.save()
        say("building the book")
        log.record.book = {"seconds": build_book(target, strict=strict)}
        index = book_index(target)
        log.record.book["index"] = str(index)
    log.record.wall_seconds = time.perf_counter() - started
    log.record.finish()
    log.save()
    return RunResult(profile, results, extraction, executed, index, log.record.wall_seconds)
