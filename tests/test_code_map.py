"""The code map (``book/code_map.md``) is true of the package it maps, and the packages' docstrings,
which its module tables are made from (``analysis.study.code_map``), list every module once.

The page (its module tables included, as the book build writes them) names code in backticks in a few forms, all read here:

- a module in a stage table's first column, as its path under ``analysis/`` without ``.py``
  (``findings/rules``, ``profiles``); the same form in prose, and ``analysis/findings/rules.py``;
- a folder, with a trailing slash (``findings/calibration/``, ``analysis/``), and a file of the
  project outside the package (``benchmarks/results.json``); such a path may be absent where it is
  generated (``.gitignore`` ignores it) or where a module named beside it names it in its source,
  as the file it reads (``benchmarks/gpu_check.json``, kept once a GPU run is);
- a name of a module as ``module.name`` (``scopes.Check``, ``rules.Role``), the module by its last
  path segments, or in full (``analysis.checks.REGISTRY``), a call with ``()``;
- a bare name: ``name()``, a class (``StudyError``), a constant (``RUNNERS``) or a name with an
  underscore (``train_profile``), each looked up in the modules named in the same table row, list
  item or paragraph (a folder stands for its modules), or anywhere in the package where that block
  names no module.

Commands, options, templates and single lower-case words (``import-original``, ``make lint``,
``notebooks/<name>.py``, ``train``) are not code names and are left alone. A name counts as defined
by a module that binds it at its top level (a function, a class, an assignment or an import): what
``module.name`` would find.

The tests fail listing every module or file that does not exist, every name a module does not
define, every module of the package that the stage tables leave out (or name twice), stage tables
out of the order of import-linter's ``layers`` contract, a list of the registry's checks that is
not the registry's, and what a package's docstring still names that is no longer in it
(``stale_names``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from analysis import checks
from analysis.study import book, code_map

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analysis"
CODE_MAP = ROOT / "book" / "code_map.md"
FILE_SUFFIXES = {"py", "md", "json", "yml", "yaml", "toml", "cff", "ipynb", "txt", "cfg", "parquet", "csv"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --------------------------------------------------------------------------- the package


def modules_on_disk(package: Path = PACKAGE) -> set[str]:
    """Every module of the package as the map writes it: its path under the package, no ``.py``."""
    return {
        p.relative_to(package).with_suffix("").as_posix()
        for p in package.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module's or class's top level, inside ``if``, ``try`` and ``with``."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.With):
            yield from _top_level(node.body + getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])


def _bound(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module's or class's top level binds, each with the statement that binds it."""
    names: dict[str, ast.stmt] = {}
    for node in _top_level(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update({n.id: node for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def _module_file(module: str, package: Path) -> Path:
    return package / f"{module}.py"


def defines(module: str, chain: list[str], package: Path = PACKAGE) -> bool:
    """Whether ``module.chain[0].chain[1]...`` names something: the module binds the first name, a
    class it defines (or imports from the package) binds the next."""
    path = _module_file(module, package)
    body = _tree(path).body
    for depth, name in enumerate(chain):
        bound = _bound(body)
        if name not in bound:
            return False
        node = bound[name]
        if depth == len(chain) - 1:
            return True
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package.name + "."):
            source = node.module.removeprefix(package.name + ".").replace(".", "/")
            original = next((a.name for a in node.names if (a.asname or a.name) == name), name)
            if not _module_file(source, package).exists():
                return False
            return defines(source, [original, *chain[depth + 1 :]], package)
        if not isinstance(node, ast.ClassDef):
            return False
        body = node.body
    return True


def defined_anywhere(name: str, package: Path = PACKAGE) -> list[str]:
    """The modules whose top level defines ``name`` (a function, a class or an assignment)."""
    return sorted(
        m
        for m in modules_on_disk(package)
        if any(
            not isinstance(node, ast.Import | ast.ImportFrom) and n == name
            for n, node in _bound(_tree(_module_file(m, package)).body).items()
        )
    )


# --------------------------------------------------------------------------- the page


@dataclass(frozen=True)
class Block:
    """A table row, a list item or a paragraph of the page, with the stage table it is a row of."""

    text: str
    line: int
    stage: str | None = None  # the stage of a stage-table row
    module: str | None = None  # a stage-table row's module (its first column)


def blocks(text: str) -> list[Block]:
    """The page's table rows, list items and paragraphs, in order."""
    found: list[Block] = []
    stage = None
    in_stages = False
    current: list[str] = []
    start = 0

    def flush():
        if current:
            found.append(Block("\n".join(current), start))
            current.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            flush()
            in_stages = line.strip() == "## The stages"
            stage = None
        elif line.startswith("### "):
            flush()
            stage = line[4:].strip() if in_stages else None
        elif line.startswith("|"):
            flush()
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            row = re.fullmatch(r"`([^`]+)`", cells[0])
            found.append(Block(line, number, stage, row.group(1) if (row and stage) else None))
        elif not line.strip():
            flush()
        elif line.startswith("- ") or not current:
            flush()
            current.append(line)
            start = number
        else:
            current.append(line)
    flush()
    return found


def stage_rows(text: str) -> list[Block]:
    return [b for b in blocks(text) if b.module is not None]


def _ignored(path: str, root: Path) -> bool:
    """Whether the project's ``.gitignore`` lists ``path`` (a generated file or folder)."""
    gitignore = root / ".gitignore"
    entries = gitignore.read_text().splitlines() if gitignore.exists() else []
    ignored = {e.strip().strip("/") for e in entries if e.strip() and not e.startswith("#")}
    parts = path.strip("/").split("/")
    return any("/".join(parts[:k]) in ignored for k in range(1, len(parts) + 1))


class Reader:
    """Reads the backticked references of a page against a package and its project."""

    def __init__(self, package: Path = PACKAGE):
        self.package = package
        self.root = package.parent
        self.modules = modules_on_disk(package)
        self.folders = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_dir()} - {"."}
        self.folders = {f for f in self.folders if "__pycache__" not in f}

    def by_suffix(self, dotted: list[str]) -> list[str]:
        """The modules whose path ends in these segments (``rules``, ``findings.rules``)."""
        tail = "/".join(dotted)
        return sorted(m for m in self.modules if m == tail or m.endswith("/" + tail))

    def module_of_path(self, span: str) -> tuple[str | None, str | None]:
        """(module or folder, problem) of a slashed span that names the package's code (under
        ``analysis/``, or under one of its folders: ``findings/rules``); (None, None) for a path of
        the project outside the package."""
        prefix = self.package.name + "/"
        if span.startswith(prefix) or span == prefix:
            relative = span.removeprefix(prefix)
        elif span.split("/")[0] in self.folders:
            relative = span
        else:
            return None, None
        if not relative or relative.endswith("/"):
            folder = relative.rstrip("/")
            ok = folder == "" or folder in self.folders
            return f"{folder}/", None if ok else f"`{span}`: no folder analysis/{folder}/"
        module = relative.removesuffix(".py")
        ok = module in self.modules
        return module, None if ok else f"`{span}`: no module analysis/{module}.py"

    def context(self, block: Block) -> tuple[set[str], list[str]]:
        """The modules a block names (a folder: its modules) and the problems of the modules and
        files it names."""
        named: set[str] = set()
        problems: list[str] = []
        outside: list[str] = []  # paths of the project outside the package
        if block.module is not None:  # a stage table's first column: always a module of the package
            named.add(block.module)
            if block.module not in self.modules:
                problems.append(f"`{block.module}`: no module analysis/{block.module}.py")
        for span in re.findall(r"`([^`]+)`", block.text):
            if span == block.module or re.search(r"[\s<>{}=]", span):
                continue
            if "/" in span:
                module, problem = self.module_of_path(span)
                if problem:
                    problems.append(problem)
                elif module is None:
                    outside.append(span)
                else:
                    named.add(module)
                continue
            head = span.removesuffix("()").split(".")
            if len(head) > 1 and head[-1] in FILE_SUFFIXES:
                continue  # a file name (run_log.json, pyproject.toml)
            if len(head) > 1:
                module, _, _ = self.resolve_dotted(head, set())
                if module:
                    named.add(module)
            elif self.by_suffix(head) and not span.endswith("()"):
                named.update(self.by_suffix(head))  # a module by its name (sample_draws)
        modules = set()
        for name in named:
            if name.endswith("/"):
                folder = name.rstrip("/")
                modules |= {m for m in self.modules if not folder or m.startswith(folder + "/")}
            else:
                modules.add(name)
        for span in outside:  # absent: generated (ignored by git), or a file a module named here reads
            if not (self.root / span).exists() and not _ignored(span, self.root):
                readers = [
                    m for m in modules if m in self.modules and span in _module_file(m, self.package).read_text()
                ]
                if not readers:
                    problems.append(f"`{span}`: no such file or folder in the project")
        return modules, problems

    def resolve_dotted(self, segments: list[str], context: set[str]) -> tuple[str | None, list[str], str | None]:
        """(module, the names after it, problem) of a dotted reference."""
        if segments[0] == self.package.name:
            segments = segments[1:]
            for k in range(len(segments), 0, -1):
                if "/".join(segments[:k]) in self.modules:
                    return "/".join(segments[:k]), segments[k:], None
            return None, [], f"no module analysis/{'/'.join(segments)}"
        for k in range(len(segments) - 1, 0, -1):
            found = self.by_suffix(segments[:k])
            if len(found) > 1:
                found = [m for m in found if m in context] or found
            if len(found) == 1:
                return found[0], segments[k:], None
            if found:
                return None, [], f"`{'.'.join(segments[:k])}` is ambiguous: {', '.join(found)}"
        return None, [], f"no module `{segments[0]}` in analysis"

    def names(self, block: Block, context: set[str]) -> list[str]:
        """The problems of the code names a block gives."""
        problems = []
        where = f"line {block.line}"
        for span in re.findall(r"`([^`]+)`", block.text):
            if span == block.module or "/" in span or re.search(r"[\s<>{}=-]", span):
                continue
            call = span.endswith("()")
            segments = span.removesuffix("()").split(".")
            if not all(IDENTIFIER.fullmatch(s) for s in segments) or (
                len(segments) > 1 and segments[-1] in FILE_SUFFIXES
            ):
                continue
            if len(segments) > 1:
                module, chain, problem = self.resolve_dotted(segments, context)
                if problem:
                    problems.append(f"{where}: `{span}`: {problem}")
                elif chain and not defines(module, chain, self.package):
                    problems.append(f"{where}: `{span}`: analysis/{module}.py defines no `{'.'.join(chain)}`")
                continue
            name = segments[0]
            looks_like_code = (
                call
                or (name[0].isupper() and any(c.islower() for c in name))  # a class
                or (name.isupper() and len(name) >= 3)  # a constant (not a check id)
                or ("_" in name.strip("_") and not self.by_suffix([name]))  # a function, not a module
            )
            if not looks_like_code:
                continue
            if context:
                if not any(defines(m, [name], self.package) for m in context):
                    shown = ", ".join(sorted(context)[:4]) + (
                        f" or {len(context) - 4} more" if len(context) > 4 else ""
                    )
                    problems.append(f"{where}: `{span}`: not defined by {shown}")
            elif not defined_anywhere(name, self.package):
                problems.append(f"{where}: `{span}`: defined nowhere in analysis")
        return problems


def problems_of(text: str, package: Path = PACKAGE) -> list[str]:
    """Every module, file or name the page gives that the package or the project lacks."""
    reader = Reader(package)
    problems = []
    for block in blocks(text):
        context, missing = reader.context(block)
        problems += [f"line {block.line}: {p}" for p in missing]
        problems += reader.names(block, context)
    return problems


def coverage_of(text: str, package: Path = PACKAGE) -> dict[str, list[str]]:
    """The modules the stage tables leave out, name twice, or name without a module on disk."""
    named = [b.module for b in stage_rows(text)]
    disk = modules_on_disk(package)
    return {
        "missing from the stage tables": sorted(disk - set(named)),
        "named twice": sorted({m for m in named if named.count(m) > 1}),
        "not a module on disk": sorted(set(named) - disk),
    }


def on_disk(package: Path) -> set[str]:
    """The modules of ``package`` (its subpackages with a trailing ``/``), as its docstring names them."""
    modules = {p.stem for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    return modules | {p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()}


def commands(package: Path = PACKAGE) -> set[str]:
    """The command line's commands (``train``, ``split``), read from the ``add_parser`` calls of the
    package's ``cli/`` (read, not imported: the commands import torch): words a docstring may set in
    backticks that are not code of the package."""
    return {
        node.args[0].value
        for path in (package / "cli").rglob("*.py")
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_parser"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


def names_code(segments: list[str], root: Path = PACKAGE) -> bool:
    """Whether ``analysis.<segments>`` names a package or module of ``root``, or a name that one
    defines (a package: its ``__init__`` binds it, re-exports included)."""
    for k in range(len(segments), 0, -1):
        path, chain = root.joinpath(*segments[:k]), segments[k:]
        if path.with_suffix(".py").is_file():
            return not chain or defines("/".join(segments[:k]), chain, root)
        if (path / "__init__.py").is_file():
            return not chain or (len(chain) == 1 and chain[0] in _bound(_tree(path / "__init__.py").body))
    return not segments


def stale_names(package: Path, root: Path = PACKAGE) -> list[str]:
    """What a package's docstring names in double backticks as code that is not there: a bare name
    (``rules``, ``calibration/``) that is neither one of the package's own modules or subpackages,
    nor defined at the top level of one of its modules (``run_checks``), nor a command; a dotted
    name (``analysis.findings.scopes``, ``rule.Rule``) whose first part is no module of ``root``
    (``analysis`` itself excepted) or, written in full, that names no module or nothing in it."""
    docstring = ast.get_docstring(_tree(package / "__init__.py")) or ""
    own = on_disk(package)
    paths = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    defined = {
        name
        for path in paths
        for name, node in _bound(_tree(path).body).items()
        if not isinstance(node, ast.Import | ast.ImportFrom)
    }
    modules = modules_on_disk(root)
    stems = {m.split("/")[-1] for m in modules} | {f.name for f in root.rglob("*") if (f / "__init__.py").is_file()}
    stale = []
    for span in re.findall(r"``([^`]+)``", docstring):
        if re.fullmatch(r"[a-z_][a-z0-9_]*/", span):
            if span not in own:
                stale.append(span)
        elif re.fullmatch(r"[a-z_][a-z0-9_]*", span):
            if span not in own and span not in defined and span not in commands(root):
                stale.append(span)
        elif re.fullmatch(r"[A-Za-z_][\w.]*\.[\w]+(\(\))?", span) and not span.endswith(
            tuple("." + s for s in FILE_SUFFIXES)
        ):
            segments = span.removesuffix("()").split(".")
            if segments[0] == root.name:
                if not names_code(segments[1:], root):
                    stale.append(span)
            elif segments[0] not in stems:
                stale.append(span)
    return stale


def page_text() -> str:
    """The code map as a reader sees it: its module tables included where the page includes them."""
    include = f"```{{include}} {book.CODE_MAP_FILE.relative_to('book').as_posix()}\n```"
    text = CODE_MAP.read_text()
    assert text.count(include) == 1, "the code map includes its generated module tables once"
    return text.replace(include, code_map.stage_tables())


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("package", code_map.packages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_package_docstring_lists_its_modules_once_and_no_other(package):
    source = (package / "__init__.py").read_text()
    names = [m["name"] for m in code_map.ENTRY.finditer(ast.get_docstring(ast.parse(source)) or "")]
    listed, disk = set(names), on_disk(package)
    assert not (disk - listed), f"modules missing from {package.name}'s docstring: {sorted(disk - listed)}"
    assert not (listed - disk), f"{package.name}'s docstring names what does not exist: {sorted(listed - disk)}"
    assert len(names) == len(listed), f"{package.name}'s docstring names a module twice"
    stale = stale_names(package)
    assert not stale, f"{package.name}'s docstring names code that is not in it: {stale}"


def test_a_package_docstring_s_entries_are_read_whole(tmp_path):
    (tmp_path / "one.py").write_text("")
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "__init__.py").write_text('"""Inner.\n\n- ``deep``: deep down\n"""\n')
    (tmp_path / "inner" / "deep.py").write_text("")
    (tmp_path / "__init__.py").write_text(
        '"""Top.\n\n- ``one``: the first line\n  and its rest, ``run()``\n- ``inner/``: the inner one\n\nAfter.\n"""\n'
    )
    assert code_map.listed(tmp_path) == {"one": "the first line and its rest, ``run()``", "inner/": "the inner one"}
    assert on_disk(tmp_path) == {"one", "inner/"}
    assert code_map.stage_tables(tmp_path) == (
        "### one\n\nThe first line and its rest, `run()`.\n\n" + code_map.HEADER + "\n| `one` | the first line and its "
        "rest, `run()` |\n\n### inner\n\nThe inner one.\n\n" + code_map.HEADER + "\n| `inner/deep` | deep down |\n"
    )


def test_a_package_docstring_s_stale_names_are_found(tmp_path):
    """A module, subpackage or name a docstring still names after it moved or went is found; the
    package's own modules, what they define, the commands and full names that resolve are not."""
    root = tmp_path / "analysis"
    (root / "inner").mkdir(parents=True)
    (root / "cli").mkdir()
    (root / "__init__.py").write_text("")
    (root / "cli" / "__init__.py").write_text("")
    (root / "cli" / "main.py").write_text('def add(commands):\n    commands.add_parser("train")\n')
    (root / "inner" / "kept.py").write_text("def run_it():\n    pass\n")
    (root / "inner" / "__init__.py").write_text(
        '"""Inner: ``kept``, ``run_it``, ``train``, ``kept.run_it``, ``analysis.inner``, ``analysis.inner.kept.run_it``;\n'
        "``gone``, ``moved/``, ``elsewhere.name``, ``analysis.inner.gone``, ``analysis.inner.kept.lost``.\n\n"
        '- ``kept``: kept\n"""\n'
    )
    assert stale_names(root / "inner", root) == [
        "gone",
        "moved/",
        "elsewhere.name",
        "analysis.inner.gone",
        "analysis.inner.kept.lost",
    ]


def packages_unnamed(text: str, package: Path = PACKAGE) -> list[str]:
    """The packages under ``package`` (itself included) that the page never names as a folder
    (``extract/distributed/`` or ``analysis/extract/distributed/``)."""
    named = set(re.findall(r"`([^`\s]+/)`", text))
    unnamed = []
    for path in code_map.packages(package):
        inner = path.relative_to(package).as_posix()
        full = f"{package.name}/" + ("" if inner == "." else f"{inner}/")
        if full not in named and f"{inner}/" not in named:
            unnamed.append(full)
    return unnamed


def test_the_code_map_names_every_package():
    unnamed = packages_unnamed(page_text())
    assert not unnamed, f"the code map never names these packages: {unnamed}"


def test_a_package_the_page_does_not_name_is_found(tmp_path):
    for folder in ("analysis/outer/inner", "analysis/named"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    for init in ("analysis", "analysis/outer", "analysis/outer/inner", "analysis/named"):
        (tmp_path / init / "__init__.py").write_text("")
    page = "The package `analysis/` holds `outer/` and `analysis/named/`; `other/` is no package."
    assert packages_unnamed(page, tmp_path / "analysis") == ["analysis/outer/inner/"]


def test_every_module_file_and_name_the_code_map_gives_exists():
    problems = problems_of(page_text())
    assert not problems, "the code map names what the package lacks:\n" + "\n".join(problems)


def test_the_stage_tables_name_every_module_once_and_no_other():
    coverage = coverage_of(page_text())
    assert not any(coverage.values()), coverage


def test_the_stage_tables_are_import_linter_s_layers_bottom_up():
    """The page says a module imports only from its own stage and those before it; import-linter's
    ``layers`` contract (top layer first) checks it, so the tables follow it from the bottom."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    expected = [{m.strip() for m in layer.split(":")} - {"__main__"} for layer in reversed(layers)]
    stages: dict[str, set[str]] = {}
    for row in stage_rows(page_text()):
        stages.setdefault(row.stage, set()).add(row.module.split("/")[0])
    assert list(stages.values()) == expected, list(stages.items())


def check_ids_in(paragraph: str) -> set[str]:
    """The check ids a sentence lists: ``F1-F5`` as F1 to F5, ``L and L2``, ``A1``."""
    ids = set()
    for letter, low, high in re.findall(r"\b([A-Z])(\d+)-\1(\d+)\b", paragraph):
        ids |= {f"{letter}{i}" for i in range(int(low), int(high) + 1)}
    paragraph = re.sub(r"\b([A-Z])(\d+)-\1(\d+)\b", "", paragraph)
    words = set(re.findall(r"\b[A-Z]\d*\b", paragraph))
    return ids | {w for w in words if w in checks.all_ids() or re.fullmatch(r"[A-Z]\d+", w)}


def test_the_code_map_lists_the_registry_s_checks():
    """The paragraph that says what the checks registry holds lists its checks, no fewer, no more."""
    (paragraph,) = [b.text for b in blocks(page_text()) if re.match(r"The checks registry\b", b.text)]
    assert check_ids_in(paragraph) == set(checks.all_ids()), {
        "not listed": sorted(set(checks.all_ids()) - check_ids_in(paragraph)),
        "not in the registry": sorted(check_ids_in(paragraph) - set(checks.all_ids())),
    }


def test_the_reader_finds_what_a_page_gets_wrong(tmp_path):
    """The checks above on a toy package and page: each kind of mistake is found, and only those."""
    package = tmp_path / "analysis"
    (package / "core").mkdir(parents=True)
    (package / "core" / "errors.py").write_text("class StudyError(Exception):\n    code = 1\n")
    (package / "core" / "shapes.py").write_text("from analysis.core.errors import StudyError\nTABLE = {}\n")
    (package / "store.py").write_text('def write():\n    return "kept/store.json"\n')
    (package / "__init__.py").write_text("")
    (tmp_path / "book").mkdir()
    (tmp_path / ".gitignore").write_text("/results/\n")
    page = (
        "# Code map\n\n`core/` holds `TABLE` (`core/shapes`); `errors.StudyError.code`, `shapes.StudyError.code`,\n"
        "`errors.missing()`, `analysis.core.errors.StudyError`, `nope.thing`, `book/`, `results/a/b.json`, `docs/x.md`.\n\n"
        "## The stages\n\n### core\n\n| module | what |\n| --- | --- |\n"
        "| `core/errors` | the base class (`StudyError`, `OtherError`) |\n| `core/gone` | gone |\n\n"
        "### store\n\n| module | what |\n| --- | --- |\n| `store` | `write()`, `read()`, `kept/store.json` |\n"
        "| `store` | again, `kept/other.json` |\n\n"
        "- **A thing**: `run_thing()` and `make lint` and `import-original`.\n"
    )
    assert problems_of(page, package) == [
        "line 3: `docs/x.md`: no such file or folder in the project",
        "line 3: `errors.missing()`: analysis/core/errors.py defines no `missing`",
        "line 3: `nope.thing`: no module `nope` in analysis",
        "line 12: `OtherError`: not defined by core/errors",
        "line 13: `core/gone`: no module analysis/core/gone.py",
        "line 19: `read()`: not defined by store",
        "line 20: `kept/other.json`: no such file or folder in the project",
        "line 22: `run_thing()`: defined nowhere in analysis",
    ]
    assert coverage_of(page, package) == {
        "missing from the stage tables": ["core/shapes"],
        "named twice": ["store"],
        "not a module on disk": ["core/gone"],
    }
    assert check_ids_in("holds F1-F3, L and L2, A1 and G1; T1-T2") == {
        "F1",
        "F2",
        "F3",
        "L",
        "L2",
        "A1",
        "G1",
        "T1",
        "T2",
    }
