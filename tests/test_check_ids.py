"""The report and the engine name no check by hand: a check is reached through the registry's fields
and what its own module in ``analysis.checks`` exports (e.g. ``a5_context.CHECK.id``), and a grouping
of checks (the length checks answered together, the controls) is declared in ``analysis.checks.groupings``."""

import ast
from pathlib import Path

from analysis import checks

PACKAGE = Path(__file__).resolve().parents[1] / "analysis"
SCANNED = ("report", "findings")  # the pages and the engine; the checks' own modules are in checks/


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module and of its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def ids_named(source: str, ids: frozenset[str]) -> list[tuple[int, str]]:
    """(line, id) of every string constant of ``source`` (docstrings aside) equal to one of ``ids``."""
    tree = ast.parse(source)
    skipped = docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and id(node) not in skipped and node.value in ids
    )


def test_the_report_and_the_engine_name_no_check_id():
    ids = frozenset(checks.all_ids())
    named = [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} {value!r}"
        for folder in SCANNED
        for path in sorted((PACKAGE / folder).rglob("*.py"))
        for line, value in ids_named(path.read_text(), ids)
    ]
    assert not named, "check ids written by hand (read the registry or the check's module):\n" + "\n".join(named)


def test_the_scan_finds_an_id_written_by_hand_and_skips_docstrings():
    source = '"""Shows F1."""\n\n\nclass C:\n    """F1."""\n\n\ndef f():\n    """F1 again."""\n    return ["F1", "F1 and more", f"{x}F1"]\n'
    assert ids_named(source, frozenset({"F1"})) == [(10, "F1"), (10, "F1")]
