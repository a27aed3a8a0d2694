"""The book's chapters, read from the one list of them: the project's ``_toc.yml``.

Every chapter under ``book/notebooks/`` is a notebook ``notebooks/<name>.py`` that the study
executes. ``_toc.yml`` lists them in book order, and a chapter entry may say more in its ``meta``
mapping (which jupyter-book 1.x accepts and ignores):

- ``conditions: family``: the page reads the conditions of its own family
  (``analysis.profiles.family_conditions``); without it, a page reads all of a run's conditions;
- ``standalone: <how its page is made>``: the page is executed by a command of its own, not as part
  of a profile's book, and the book has the chapter only once that command has made it;
- ``source: <a profile source>``: the page is executed by the profiles of that ``Profile.source``
  alone (e.g. ``training``: the profiles that fine-tune), whose book is that page with the methods;
  the other profiles' books leave it out.

A chapter's own parameters (beyond those every page takes) are the names its notebook's
``parameters`` cell assigns. So a new chapter is one notebook plus one line in ``_toc.yml``. The
profiles, the page parameters and the book build read this module.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from analysis.core.errors import StudyError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOC = "_toc.yml"
NOTEBOOK_FOLDER = "book/notebooks"  # where the executed chapters go (as _toc.yml names them)
SOURCE_FOLDER = "notebooks"  # the notebooks' text sources, notebooks/<name>.py
FAMILY = "family"
_PARAMETERS_CELL = re.compile(r"^# %% tags=\[[^\]]*\"parameters\"[^\]]*\]\s*$", re.MULTILINE)
_CELL = re.compile(r"^# %%", re.MULTILINE)


class ChapterError(StudyError, ValueError):
    """A table of contents or a chapter notebook that the study cannot read."""


@dataclass(frozen=True)
class Chapter:
    """One executed chapter of the book, as ``_toc.yml`` lists it."""

    name: str  # the notebook's name: notebooks/<name>.py, book/notebooks/<name>.ipynb
    part: str  # the caption of its part ("" for the landing page)
    family: bool = False  # it reads its own family's conditions (meta conditions: family)
    standalone: str | None = None  # how its page is made, when a command of its own makes it
    source: str | None = None  # the Profile.source of the profiles that alone execute it (meta source)


def _entries(toc: dict) -> list[tuple[str, str, dict]]:
    """(file, part caption, meta) of the root and of every chapter, in book order."""
    entries = [(toc["root"], "", toc.get("meta") or {})]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            entries.append((chapter["file"], part.get("caption", ""), chapter.get("meta") or {}))
    return entries


def read_toc(root: Path = PROJECT_ROOT) -> dict:
    """The parsed ``_toc.yml`` of a project root."""
    path = Path(root) / TOC
    try:
        toc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ChapterError(f"{path}: cannot read the book's table of contents ({error})") from None
    if not isinstance(toc, dict) or "root" not in toc:
        raise ChapterError(f"{path}: not a jupyter-book table of contents (no root entry)")
    return toc


def chapters(root: Path = PROJECT_ROOT) -> tuple[Chapter, ...]:
    """The executed chapters of the book at ``root``, in book order (the methods page and other
    files outside ``book/notebooks`` are not executed and are left out)."""
    found = []
    for file, part, meta in _entries(read_toc(root)):
        path = Path(file)
        if path.parent != Path(NOTEBOOK_FOLDER):
            continue
        conditions = meta.get("conditions")
        if conditions not in (None, FAMILY):
            raise ChapterError(f"{Path(root) / TOC}: {file}: meta conditions must be {FAMILY!r} or absent")
        source = meta.get("source")
        if source is not None and not (isinstance(source, str) and source):
            raise ChapterError(f"{Path(root) / TOC}: {file}: meta source must name a profile source")
        found.append(Chapter(path.name, part, conditions == FAMILY, meta.get("standalone"), source))
    return tuple(found)


def project_chapters() -> tuple[Chapter, ...]:
    """The chapters of this project's book; none where the package runs without the project's
    checkout (installed with ``pip install .``, e.g. on a Ray worker node), which can extract and
    import but has no book to build."""
    if not (PROJECT_ROOT / TOC).is_file():
        return ()
    return chapters(PROJECT_ROOT)


def notebook_source(name: str, root: Path = PROJECT_ROOT) -> Path:
    """The text notebook of a chapter, ``notebooks/<name>.py``."""
    return Path(root) / SOURCE_FOLDER / f"{name}.py"


def parameters_of(name: str, root: Path = PROJECT_ROOT) -> tuple[str, ...]:
    """The names a chapter's notebook assigns in its ``parameters`` cell, in order."""
    names = []
    for node in _parameters_cell(name, root):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return tuple(names)


def parameter_defaults(name: str, root: Path = PROJECT_ROOT) -> dict:
    """The values a chapter's ``parameters`` cell gives its parameters (those written as literals)."""
    defaults = {}
    for node in _parameters_cell(name, root):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                defaults[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return defaults


def _parameters_cell(name: str, root: Path) -> list[ast.stmt]:
    """The statements of a chapter notebook's ``parameters`` cell."""
    path = notebook_source(name, root)
    try:
        text = path.read_text()
    except OSError as error:
        raise ChapterError(f"{path}: cannot read the notebook of chapter {name} ({error.strerror})") from None
    start = _PARAMETERS_CELL.search(text)
    if start is None:
        raise ChapterError(f"{path}: no cell tagged parameters")
    following = _CELL.search(text, start.end())
    cell = text[start.end() : following.start() if following else len(text)]
    return ast.parse(cell).body
