"""The book: each notebook executed by papermill into ``book/notebooks``, then ``jupyter-book build``.

``notebooks/<name>.py`` (jupytext percent format) is converted to a notebook with the kernel
papermill will use, executed with a profile's parameters, and its code cells tagged so that the
pages show results only. The book is built over the project's ``_config.yml`` and ``_toc.yml``
with warnings as errors, HTML into ``book/_build/html``. Before it builds, ``build_book`` writes
what the pages include from the code (``write_generated``: the checks page's claims, from the
registry, and the code map's tables, from the packages' docstrings, into ``book/_generated``, which git ignores), so that no page holds a pasted copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from analysis import profiles
from analysis.core import chapters, processes
from analysis.core.errors import StudyError
from analysis.profiles import Profile
from analysis.report import verdicts
from analysis.report.display import PAGE_ENDS
from analysis.store.runlog import RunRecord
from analysis.study import code_map, measured

PROJECT_ROOT = chapters.PROJECT_ROOT
KERNEL_NAME = "python3"
BOOK_SOURCES = ("_config.yml", "_toc.yml", "CITATION.cff", "book")  # CITATION.cff: html_extra_path
NOTEBOOK_FOLDER = chapters.NOTEBOOK_FOLDER
# The results store behind a book, as one Parquet file the reproducibility page offers for download
# (``html_extra_path`` in _config.yml puts it at the site's root).
BOOK_EXPORT = Path("book", "_extra", "results.parquet")
# The bibliography of a book without the landing page (``table_of_contents(only=...)``).
REFERENCES_PAGE = "book/references"
# What the book's pages include from the code, written by every build (``write_generated``; git
# ignores the folder): the checks page's claims, ``{include}``d by book/checks.md.
GENERATED_FOLDER = Path("book", "_generated")
CLAIMS_FILE = GENERATED_FOLDER / "claims.md"
# ... and the measured runs with this build's run, ``{include}``d by book/execution_statistics.md.
MEASURED_RUNS_FILE = GENERATED_FOLDER / "measured_runs.md"
CODE_MAP_FILE = GENERATED_FOLDER / "code_map.md"  # the code map's module tables (``code_map.stage_tables``)


# --------------------------------------------------------------------------- notebooks


def ensure_kernel(name: str = KERNEL_NAME) -> None:
    """Register this environment's Python as a Jupyter kernel if no kernel of that name exists."""
    from jupyter_client.kernelspec import KernelSpecManager

    if name in KernelSpecManager().find_kernel_specs():
        return
    command = [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", name]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"cannot register the Jupyter kernel {name!r}: {done.stderr.strip().splitlines()[-1:]}")


def notebook_parameters(
    notebook: str,
    profile: Profile,
    results_dir: Path,
    *,
    data_dir=None,
    root: Path = PROJECT_ROOT,
    book_root: Path | None = None,
) -> dict:
    """The papermill parameters of one notebook under a profile (absolute paths): the profile's name
    and where its results are; the page reads the rest from the run log."""
    parameters: dict[str, str | list[str] | None] = {
        "profile": profile.name,
        "results_dir": str(Path(results_dir).resolve()),
        "data_dir": str(Path(data_dir).resolve()) if data_dir else None,
    }
    if notebook == "reproducibility":
        parameters["benchmarks_file"] = str((root / "benchmarks" / "results.json").resolve())
        parameters["export_file"] = str(((book_root or root) / BOOK_EXPORT).resolve())
        if profile.name != "decide":  # the deciding run's store beside this one, where it exists
            parameters["deciding_dir"] = str(Path(results_dir).resolve().parent / "decide")
    if notebook == "original_comparison":  # the stores of the imported and the GPU profiles beside this one
        parameters["compare_dirs"] = [str(Path(results_dir).resolve().parent / name) for name in ("original", "paper")]
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
            raise StudyError(
                f"{source}: cell {error.exec_count} failed: {error.ename}: {error.evalue} "
                f"(the executed notebook is at {output})"
            ) from None
    prepare_for_book(output)
    return time.perf_counter() - started


def prepare_for_book(path: Path) -> None:
    """An executed notebook as the book shows it: its code folded (``fold_code``) and nothing after
    the output that ends the page (``cut_after_page_end``)."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    fold_code(notebook)
    cut_after_page_end(notebook)
    nbformat.write(notebook, path)


def fold_code(notebook) -> None:
    """Tag every code cell that carries no display tag ``remove-input``: the book shows results,
    and the code that made them is in the notebook files."""
    for cell in notebook.cells:
        if cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            if not {"hide-input", "remove-input", "remove-cell"} & set(tags):
                tags.append("remove-input")


def cut_after_page_end(notebook) -> int:
    """Drop the cells after the first one whose output ends the page (``display.PAGE_ENDS``: a page
    whose store holds none of its results says so and the command that brings them, and its later
    section headings would stand empty); the number of cells dropped."""
    for position, cell in enumerate(notebook.cells):
        outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
        if any(output.get("metadata", {}).get(PAGE_ENDS) for output in outputs):
            dropped = len(notebook.cells) - position - 1
            del notebook.cells[position + 1 :]
            return dropped
    return 0


def notebook_sources(root: Path = PROJECT_ROOT, names: Sequence[str] | None = None) -> list[Path]:
    """The text notebooks to execute, in book order (by default every ``notebooks/*.py`` but the
    standalone ones, which their own command runs)."""
    directory = root / "notebooks"
    found = {p.stem: p for p in directory.glob("*.py")}
    wanted = (
        list(names)
        if names
        else [n for n in profiles.pages(root) if n in found]
        + sorted(set(found) - {c.name for c in chapters.chapters(root)})
    )
    missing = [n for n in wanted if n not in found]
    if missing:
        raise StudyError(f"{directory}: no notebook {', '.join(missing)} (found: {', '.join(sorted(found))})")
    return [found[n] for n in wanted]


@dataclass(frozen=True)
class NotebookRun:
    """Which notebooks (``names``, default all) of ``root`` run under ``profile`` over the store in
    ``results_dir``, into the book at ``book_root``."""

    profile: Profile
    results_dir: Path
    book_root: Path
    data_dir: Path | str | None = None
    root: Path = PROJECT_ROOT
    names: Sequence[str] | None = None


def execute_notebooks(
    run: NotebookRun, on_done: Callable[[dict], None] | None = None, say: Callable[[str], None] = print
) -> list[dict]:
    """Execute the notebooks into ``book_root/book/notebooks``, one per core at once
    (``processes.workers_for``; each kernel single-threaded; a page reads the store and writes only its own output);
    one record per notebook in book order, each also handed to ``on_done`` as soon as its notebook
    has run (the run log saves it). A failing notebook stops the notebooks not yet started."""
    ensure_kernel()
    jobs = []
    for source in notebook_sources(run.root, run.names):
        output = run.book_root / "book" / "notebooks" / f"{source.stem}.ipynb"
        parameters = notebook_parameters(
            source.stem, run.profile, run.results_dir, data_dir=run.data_dir, root=run.root, book_root=run.book_root
        )
        jobs.append((source, output, parameters))
    records: dict[str, dict] = {}

    def finished(source: Path, output: Path, seconds: float) -> None:
        records[source.stem] = {"notebook": source.stem, "seconds": seconds, "output": str(output)}
        if on_done is not None:
            on_done(records[source.stem])

    workers = processes.workers_for(len(jobs))
    if workers == 1:
        for source, output, parameters in jobs:
            say(f"executing {source.relative_to(run.root)} -> {output}")
            finished(source, output, execute_notebook(source, output, parameters, cwd=run.root))
    else:
        # processes, not threads: papermill changes the working directory of its process
        with processes.spawned_pool(workers) as pool:
            running = {}
            for source, output, parameters in jobs:
                say(f"executing {source.relative_to(run.root)} -> {output}")
                running[pool.submit(execute_notebook, source, output, parameters, run.root)] = (source, output)
            try:
                for future in as_completed(running):
                    finished(*running[future], future.result())
            except BaseException:
                pool.shutdown(cancel_futures=True)
                raise
    return [records[source.stem] for source, _, _ in jobs]


# --------------------------------------------------------------------------- book


def jupyter_book_command() -> str:
    """The jupyter-book executable of this environment."""
    beside = Path(sys.executable).with_name("jupyter-book")
    found = str(beside) if beside.is_file() else shutil.which("jupyter-book")
    if not found:
        raise StudyError(
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
                ignore=shutil.ignore_patterns("_build", "notebooks", ".ipynb_checkpoints", GENERATED_FOLDER.name),
            )
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def toc_chapters(book_root: Path = PROJECT_ROOT) -> list[str]:
    """The executed notebooks of the book's table of contents (``_toc.yml``), in book order."""
    return [c.name for c in chapters.chapters(book_root)]


def optional_chapters(book_root: Path = PROJECT_ROOT) -> dict[str, str]:
    """Chapters that a profile's book has only once their page is made: those a command of its own
    makes (``standalone`` in ``_toc.yml``) and those kept to the profiles of one source (``source``,
    e.g. the training chapter): name -> how its page is made."""
    made_by = {}
    for c in chapters.chapters(book_root):
        if c.standalone is not None:
            made_by[c.name] = c.standalone
        elif c.source is not None:
            made_by[c.name] = f"make book PROFILE={_profile_of(c.source)} writes it"
    return made_by


def _profile_of(source: str) -> str:
    """The first profile of a source (the one to name to a reader)."""
    return next((p.name for p in profiles.PROFILES.values() if p.source == source), f"<a {source} profile>")


def table_of_contents(book_root: Path, say: Callable[[str], None] = print, only: Sequence[str] | None = None) -> Path:
    """The ``_toc.yml`` to build with: the project's, less the optional chapters whose notebook has
    not been executed (each one left out is said). ``only``: a book of these chapters and the pages
    that are not notebooks (a training profile's), the first one its root."""
    source = book_root / "_toc.yml"
    optional = optional_chapters(book_root)
    absent = [n for n in optional if not (book_root / NOTEBOOK_FOLDER / f"{n}.ipynb").is_file()]
    if only:
        absent = [n for n in toc_chapters(book_root) if n not in only]
    if not absent:
        return source
    toc = yaml.safe_load(source.read_text())
    if only:
        toc["root"] = f"{NOTEBOOK_FOLDER}/{only[0]}"
        absent.append(only[0])  # the root is not a chapter too
        # the landing page, left out, holds the bibliography that the methods page cites into
        toc["parts"].append({"caption": "References", "chapters": [{"file": REFERENCES_PAGE}]})
    dropped = {f"{NOTEBOOK_FOLDER}/{name}" for name in absent}
    for part in toc.get("parts", []):
        part["chapters"] = [c for c in part.get("chapters", []) if c.get("file") not in dropped]
    toc["parts"] = [part for part in toc.get("parts", []) if part["chapters"]]
    for name in absent if not only else ():
        say(f"the book leaves out the chapter {name}: its page has not been made ({optional[name]})")
    target = book_root / "book" / "_build" / "_toc.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(toc, sort_keys=False))
    return target


def write_generated(book_root: Path, *, run: RunRecord | None = None) -> list[Path]:
    """Write what the pages of ``book_root`` include from the code, as the registry has it now: the
    claims of the checks page (``verdicts.claims_markdown``: each check's anchor, plain words, estimand
    and rule), included by book/checks.md, whose anchors (``verdicts.anchor``) the other pages link to;
    the measured runs of ``book/_data/measured.csv`` beside ``run``, the run that made this book
    (``measured.page_markdown``), included by book/execution_statistics.md; and the code map's module
    tables (``code_map.stage_tables``, from the packages' docstrings), included by book/code_map.md.
    The files written."""
    claims = book_root / CLAIMS_FILE
    claims.parent.mkdir(parents=True, exist_ok=True)
    claims.write_text(verdicts.claims_markdown() + "\n")
    runs = book_root / MEASURED_RUNS_FILE
    runs.write_text(measured.page_markdown(measured.read_measured(book_root / measured.MEASURED_FILE), run) + "\n")
    tables = book_root / CODE_MAP_FILE
    tables.write_text(code_map.stage_tables())
    return [claims, runs, tables]


def build_book(
    book_root: Path,
    strict: bool = True,
    say: Callable[[str], None] = print,
    only: Sequence[str] | None = None,
    *,
    run: RunRecord | None = None,
) -> float:
    """``jupyter-book build`` of ``book_root`` into ``book_root/book/_build/html``; seconds taken.
    The generated pages are written first (``write_generated``), so that a plain ``jupyter-book
    build`` of the same folder afterwards finds them too.

    ``strict`` turns warnings (a missing figure, a broken reference) into a failed build; ``only``:
    see :func:`table_of_contents`; ``run``: the run that made the book, for its execution statistics.
    """
    write_generated(book_root, run=run)
    command = [
        jupyter_book_command(),
        "build",
        str(book_root),
        "--path-output",
        str(book_root / "book"),
        "--builder",
        "html",
        "--toc",
        str(table_of_contents(book_root, say, only)),
    ]
    if strict:
        command += ["-W", "-n", "--keep-going"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=book_root, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise StudyError(f"jupyter-book build failed (exit {done.returncode}):\n{tail}")
    return time.perf_counter() - started


def book_index(book_root: Path = PROJECT_ROOT) -> Path:
    """The built book's front page."""
    return book_root / "book" / "_build" / "html" / "index.html"
