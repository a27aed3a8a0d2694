"""The report and the engine name no check by hand: a check is reached through the registry's fields
and what its own module in ``analysis.checks`` exports (e.g. ``a5_context.CHECK.id``), and a grouping
of checks (the length checks answered together, the controls) is declared in ``analysis.checks.groupings``.
A string of ``analysis/report`` or ``analysis/findings`` (docstrings aside) that holds a check id as a
word anywhere ("F1 and more", "F1's gap") fails."""

import ast
import re
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
    """(line, id) of every check id that a string constant of ``source`` (docstrings aside, the parts of
    an f-string included) holds as a word."""
    tree = ast.parse(source)
    skipped = docstrings(tree)
    word = re.compile(
        r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, sorted(ids, key=len, reverse=True))) + r")(?![A-Za-z0-9_])"
    )
    return sorted(
        (node.lineno, match)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped
        for match in word.findall(node.value)
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


def test_the_scan_finds_an_id_as_a_word_in_any_string_and_skips_docstrings():
    source = (
        '"""Shows F1."""\n\n\nclass C:\n    """F1."""\n\n\ndef f():\n    """F1 again."""\n'
        '    return ["F1", "F1 and more", f"{x} F1\'s gap", "F12", "xF1", "L2 or L", "HELLO"]\n'
    )
    assert ids_named(source, frozenset({"F1", "L", "L2"})) == [
        (10, "F1"),
        (10, "F1"),
        (10, "F1"),
        (10, "L"),
        (10, "L2"),
    ]
