"""The package's layout: thin package initialisers, no torch where the pages read, short functions. The
stages' import order is import-linter's layers contract (pyproject.toml, make lint)."""

import ast
import subprocess
import sys
from pathlib import Path

from analysis import profiles
from analysis.study import book

PACKAGE = Path(__file__).resolve().parents[1] / "analysis"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_package_initialisers_hold_no_logic():
    allowed = (ast.Import, ast.ImportFrom, ast.Expr, ast.Assign)
    for module, path in modules().items():
        if path.name != "__init__.py":
            continue
        for node in ast.parse(path.read_text()).body:
            assert isinstance(node, allowed), (module, ast.dump(node)[:80])
            if isinstance(node, ast.Assign):  # only __all__ and __version__
                assert [t.id for t in node.targets] in (["__all__"], ["__version__"]), module
            if isinstance(node, ast.Expr):
                assert isinstance(node.value, ast.Constant), module


def test_no_two_modules_or_packages_share_a_name():
    """A module's name says what it holds, once in the package: ``training`` or ``errors`` in two
    stages would leave a reader (and a code map's row) to guess which."""
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*"):
        if "__pycache__" in path.parts or path.name in ("__init__.py", "__main__.py"):
            continue
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file()):
            names.setdefault(path.stem, []).append(path.relative_to(PACKAGE).as_posix())
    shared = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert not shared, shared


def test_the_pages_and_the_findings_do_not_import_torch():
    code = (
        "import sys\n"
        "import analysis.report.page, analysis.report.sections, analysis.report.your_data_page, analysis.findings.rules\n"
        "import analysis.profiles, analysis.core.registry, analysis.store.runlog\n"
        "import analysis.report.training_chapter, analysis.findings.training_checks, analysis.findings.calibration.training_calibration\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_book_chapters_are_the_profile_pages_then_the_training_one_then_the_standalone_ones():
    training = profiles.pages(source="training")
    assert training == ("during_training",)
    assert book.toc_chapters() == [
        *profiles.NOTEBOOKS,
        *training,
        *(c.name for c in profiles.CHAPTERS if c.standalone is not None),
    ]


MAX_FUNCTION_LINES = 60
# to be split: functions longer than MAX_FUNCTION_LINES in modules that are being edited elsewhere
LONG_FUNCTIONS_TO_SPLIT: set[str] = set()


def long_functions() -> dict[str, int]:
    """Every function of the package (methods and nested ones included) over MAX_FUNCTION_LINES lines,
    named ``module.function`` below ``analysis``, with its length from ``def`` to its last line."""
    found = {}
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found[f"{module.removeprefix('analysis.')}.{node.name}"] = length
    return found


def test_no_function_is_longer_than_sixty_lines():
    found = long_functions()
    assert {name: n for name, n in found.items() if name not in LONG_FUNCTIONS_TO_SPLIT} == {}
    split = LONG_FUNCTIONS_TO_SPLIT - set(found)
    assert not split, f"{sorted(split)} no longer over {MAX_FUNCTION_LINES} lines: remove from LONG_FUNCTIONS_TO_SPLIT"


def test_the_function_length_check_sees_a_long_function(tmp_path, monkeypatch):
    long_one = "def long_one():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    (tmp_path / "long.py").write_text(long_one)
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: {"analysis.long": tmp_path / "long.py"})
    assert long_functions() == {"long.long_one": MAX_FUNCTION_LINES + 1}


def test_at_most_ten_modules_lie_flat_at_the_top_of_the_package():
    flat = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in {"__init__", "__main__"})
    assert len(flat) <= 10, f"{len(flat)} flat modules: {flat}; group what belongs together into a package"


MAX_ERROR_CLASSES = 15


def error_classes(package: Path = PACKAGE) -> list[str]:
    """The error classes the package defines (a class whose name ends in ``Error``), as ``module.Class``."""
    return sorted(
        f"{path.relative_to(package).with_suffix('').as_posix()}.{node.name}"
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Error")
    )


def test_at_most_fifteen_error_classes():
    """One error per thing that can be wrong (a data file, the store, a profile...), not one per module:
    each message names the file, the record and what is wrong, so the class need not."""
    found = error_classes()
    assert len(found) <= MAX_ERROR_CLASSES, f"{len(found)} error classes: {found}"


def test_the_error_count_sees_every_error_class(tmp_path):
    (tmp_path / "inner").mkdir()
    (tmp_path / "one.py").write_text("class OneError(Exception):\n    pass\n\n\nclass Helper:\n    pass\n")
    (tmp_path / "inner" / "two.py").write_text("class TwoError(ValueError):\n    pass\n")
    assert error_classes(tmp_path) == ["inner/two.TwoError", "one.OneError"]
