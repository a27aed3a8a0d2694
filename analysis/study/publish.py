"""The published book: its repository and launch buttons, and the executed notebooks they open.

No repository address is written in the project: the publishing workflow names its repository
when it builds (``python -m analysis book-config``), and this module fills ``_config.yml``'s
repository button and launch buttons (Binder, Colab) from it, with a line on every page linking the
other published books and a footer linking the ``CITATION.cff`` at the book's root. The pages are
executed when the book is built and are not committed, so the workflow publishes them to a branch of
their own (``NOTEBOOKS_BRANCH``) with the results store as one Parquet file beside them; the launch
buttons point at that branch, and each published notebook reads that file, so that it re-executes
without extracting (``publish_notebooks``).
"""

from __future__ import annotations

import copy
import html
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from analysis.core.errors import StudyError

NOTEBOOKS_BRANCH = "book-notebooks"
STORE_NAME = "results.parquet"  # the store beside the published notebooks (book.BOOK_EXPORT's name)
BINDER_URL = "https://mybinder.org"
COLAB_URL = "https://colab.research.google.com"
INJECTED = "injected-parameters"  # the tag of the cell papermill adds after a notebook's parameters
PACKAGE = "layer-gradient-study"
CITATION_FILE = "CITATION.cff"  # at the project's root, copied to each book's root (html_extra_path)
OTHER_BOOK_TITLE = "another book of this study"


def check_repository(repository: str) -> str:
    """``OWNER/NAME`` as the workflow's context names it; anything else is refused in one line."""
    parts = repository.strip().split("/")
    if len(parts) != 2 or not all(parts) or any(" " in p for p in parts):
        raise StudyError(f"repository {repository!r}: expected OWNER/NAME (as github.repository names it)")
    return repository.strip()


def book_config(
    repository: str,
    *,
    server_url: str = "https://github.com",
    branch: str = NOTEBOOKS_BRANCH,
    path_to_book: str = "",
    book_url: str | None = None,
    other_books: Sequence[tuple[str, str]] = (),
) -> dict:
    """The overlay of ``_config.yml`` for a published book: the repository button and the Binder
    and Colab launch buttons, pointing at ``branch`` (where the executed notebooks are published,
    under ``path_to_book``); a footer linking the ``CITATION.cff`` at ``book_url`` (the book's own
    address), if given; and a line at the top of every page linking the ``other_books`` ((address,
    title) pairs), if any."""
    url = f"{server_url.rstrip('/')}/{check_repository(repository)}"
    overlay: dict[str, dict] = {
        "repository": {"url": url, "path_to_book": path_to_book, "branch": branch},
        "html": {"use_repository_button": True},
        "launch_buttons": {
            "notebook_interface": "classic",
            "binderhub_url": BINDER_URL,
            "colab_url": COLAB_URL,
            "thebe": False,
        },
    }
    if book_url:
        overlay["html"]["extra_footer"] = citation_footer(book_url)
    if other_books:
        overlay["html"]["announcement"] = announcement(other_books)
    return overlay


def citation_footer(book_url: str) -> str:
    """The footer line of a published book: cite it by the ``CITATION.cff`` at its root
    (``html_extra_path`` copies it there), linked by the book's address (a page's relative path to
    the root varies with its depth, and the footer is the same on every page)."""
    address = html.escape(f"{book_url.rstrip('/')}/{CITATION_FILE}")
    return f'Cite this study: see <a href="{address}">{CITATION_FILE}</a>.'


def announcement(books: Sequence[tuple[str, str]]) -> str:
    """The line at the top of every page linking the other published books, ``(address, title)`` each."""
    links = [f'<a href="{html.escape(url)}">{html.escape(title, quote=False)}</a>' for url, title in books]
    listed = links[0] if len(links) == 1 else f"{', '.join(links[:-1])} and {links[-1]}"
    return f"Also published: {listed}."


def other_books(urls: Sequence[str], titles: Sequence[str]) -> list[tuple[str, str]]:
    """The other books as ``(address, title)`` pairs, the n-th title naming the n-th address (a
    book without a title is "another book of this study"); more titles than books is refused."""
    if len(titles) > len(urls):
        raise StudyError(
            f"{len(titles)} titles for {len(urls)} other books: give each --other-title after its --other-book"
        )
    return [(url, titles[i] if i < len(titles) else OTHER_BOOK_TITLE) for i, url in enumerate(urls)]


def merged(base: Mapping, overlay: Mapping) -> dict:
    """``base`` with ``overlay`` laid over it, mapping by mapping (the overlay's values win)."""
    result = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def write_book_config(config: Path, overlay: Mapping, out: Path | None = None) -> Path:
    """Write ``config`` (the project's ``_config.yml``) with ``overlay`` over it to ``out``
    (default: ``config`` itself, as the workflow does in its own checkout)."""
    try:
        base = yaml.safe_load(Path(config).read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise StudyError(f"{config}: cannot read the book's configuration ({error})") from None
    target = Path(out or config)
    target.write_text(yaml.safe_dump(merged(base, overlay), sort_keys=False))
    return target


# --------------------------------------------------------------------------- the published notebooks


def published_parameters(profile: str) -> dict:
    """The parameters a published notebook runs with: the profile, and the store beside it (a
    kernel starts in the notebook's folder); the rest the page reads from the store's run record."""
    return {"profile": profile, "results_dir": STORE_NAME}


def parameters_source(parameters: Mapping) -> str:
    """The source of the cell that sets ``parameters`` (as papermill writes its injected cell)."""
    lines = ["# Parameters of the published notebook: the results store beside it"]
    return "\n".join(lines + [f"{name} = {value!r}" for name, value in parameters.items()])


def colab_cell_source(repository: str, server_url: str, branch: str, store_url: str) -> str:
    """A first cell that, where the project is not installed (a notebook opened alone, as Colab
    opens it), installs it from the published branch, fetches the study's data files (the page
    draws its samples from them) and downloads the store beside the notebook."""
    package = f"{PACKAGE} @ git+{server_url.rstrip('/')}/{check_repository(repository)}@{branch}"
    return "\n".join(
        [
            "# Where the project is not installed (Colab): install it and fetch the results store.",
            "import importlib.util, os, pathlib, subprocess, sys, urllib.request",
            "if importlib.util.find_spec('analysis') is None:",
            f"    subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', {package!r}], check=True)",
            "    data = pathlib.Path('data/layer_gradient').resolve()",
            "    subprocess.run([sys.executable, '-m', 'analysis', 'data', 'fetch', '--data-dir', str(data)], check=True)",
            "    os.environ.setdefault('LAYER_GRADIENT_DATA', str(data))",
            "    importlib.invalidate_caches()",
            f"if not pathlib.Path({STORE_NAME!r}).is_file():",
            f"    urllib.request.urlretrieve({store_url!r}, {STORE_NAME!r})",
        ]
    )


def publish_notebook(source: Path, target: Path, profile: str, first_cell: str | None = None) -> Path:
    """Copy one executed notebook for publishing: its injected parameters replaced by
    ``published_parameters`` (no path of the machine that built it), ``first_cell`` before all."""
    import nbformat

    notebook = nbformat.read(source, as_version=4)
    injected = [c for c in notebook.cells if INJECTED in c.metadata.get("tags", [])]
    if not injected:
        raise StudyError(f"{source}: no cell tagged {INJECTED} (not a notebook executed by the study)")
    for cell in injected:
        cell.source = parameters_source(published_parameters(profile))
        cell.outputs = []
    if first_cell:
        cell = nbformat.v4.new_code_cell(first_cell, metadata={"tags": ["remove-cell"]})
        notebook.cells.insert(0, cell)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


# GitHub refuses a pushed file over 100 MB: a larger store (the original study's, 2.9 GB) is not
# published beside the notebooks, and its pages re-execute only where the store is made again.
STORE_LIMIT_BYTES = 95 * 2**20


def publish_notebooks(
    book_root: Path,
    target: Path,
    profile: str,
    store: Path,
    *,
    first_cell: str | None = None,
    limit: int = STORE_LIMIT_BYTES,
) -> list[Path]:
    """The executed notebooks of ``book_root`` (``book/notebooks/*.ipynb``) published under
    ``target/book/notebooks`` with the store copied beside them as ``results.parquet`` when it is
    at most ``limit`` bytes (a larger one is left out, and the caller says so)."""
    folder = Path(book_root) / "book" / "notebooks"
    sources = sorted(folder.glob("*.ipynb"))
    if not sources:
        raise StudyError(f"{folder}: no executed notebook to publish (build the book first)")
    if not Path(store).is_file():
        raise StudyError(f"{store}: no results store to publish beside the notebooks")
    out = Path(target) / "book" / "notebooks"
    written = [publish_notebook(s, out / s.name, profile, first_cell) for s in sources]
    if Path(store).stat().st_size <= limit:
        shutil.copy2(store, out / STORE_NAME)
    return written
