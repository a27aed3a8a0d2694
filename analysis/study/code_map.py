"""The code map page's module tables, made from the package's own docstrings.

Each package's ``__init__`` lists its modules, one entry each: ``- ``name``: what it holds`` (a
subpackage as ``name/``; a long entry goes on in lines indented by two spaces). The top package
lists its stages in the order the data flow through them. ``stage_tables`` writes one table per
stage, in that order, each module under the package named by its path (``findings/calibration/rule``),
which book/code_map.md includes (``book.write_generated``): the page and the code say it once.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
ENTRY = re.compile(r"^- ``(?P<name>[\w/]+)``: (?P<text>.+(?:\n  \S.*)*)", re.MULTILINE)
HEADER = "| module | what it is for |\n| --- | --- |"


def listed(package: Path) -> dict[str, str]:
    """The modules the docstring of ``package`` lists (a subpackage with a trailing ``/``), in its
    order, each with its entry's text on one line."""
    source = (package / "__init__.py").read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source)) or ""
    return {m["name"]: " ".join(m["text"].split()) for m in ENTRY.finditer(docstring)}


def packages(package: Path = PACKAGE) -> list[Path]:
    """The package and every package under it."""
    return sorted(p.parent for p in package.rglob("__init__.py") if "__pycache__" not in p.parts)


def rows(name: str, text: str, package: Path = PACKAGE, prefix: str = "") -> list[tuple[str, str]]:
    """(module path, text) of a module, or of every module under a subpackage, depth first."""
    if not name.endswith("/"):
        return [(prefix + name, text)]
    folder = package / prefix / name
    return [r for inner, said in listed(folder).items() for r in rows(inner, said, package, prefix + name)]


def _markdown(text: str) -> str:
    """A docstring's text as Markdown: ``code`` in single backticks, no table separator left."""
    return re.sub(r"``([^`]+)``", r"`\1`", text).replace("|", "\\|")


def stage_tables(package: Path = PACKAGE) -> str:
    """One Markdown table per stage, under a heading of the stage's name."""
    out = []
    for stage, text in listed(package).items():
        table = "\n".join(f"| `{module}` | {_markdown(said)} |" for module, said in rows(stage, text, package))
        said = _markdown(text)
        out.append(f"### {stage.rstrip('/')}\n\n{said[:1].upper()}{said[1:]}.\n\n{HEADER}\n{table}")
    return "\n\n".join(out) + "\n"
