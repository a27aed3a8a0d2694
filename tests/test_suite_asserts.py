"""No test that asserts nothing: every ``test_*`` function of ``tests/test_*.py`` checks something.

A test counts as asserting when its body (nested functions included) holds any of:

- an ``assert`` statement whose test is not a constant (``assert True`` asserts nothing);
- ``pytest.raises``, ``pytest.warns``, ``pytest.deprecated_call`` or ``pytest.fail`` (as a call or
  a ``with`` block);
- a call whose last name starts with ``assert`` (``np.testing.assert_allclose``,
  ``pd.testing.assert_frame_equal``, ``torch.testing.assert_close``, a helper ``assert_...``);
- a call of a helper that asserts, resolved by name: a function of the same file, or one of a
  support module beside it (``synthetic``, ``conftest``, ...; ``from m import f`` or ``m.f``),
  followed through the helpers it calls in turn.

Calling code and relying on it not raising is not an assertion: a test says what it expects of
what the code returned or did. The same holds inside a test that asserts elsewhere for a loop that
calls each of several functions in turn (``for show in (a, b, c): show(page)``): the loop asserts,
on what each one returned or showed; otherwise those calls are checked only for not raising.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PYTEST_ASSERTIONS = {"raises", "warns", "deprecated_call", "fail"}
FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Module:
    """What the checker reads of one file of the suite."""

    functions: dict[str, ast.AST]  # every function of the file by name, methods and nested included
    imported: dict[str, str]  # a name imported from a support module -> that module's stem
    support: frozenset[str]  # the support modules imported whole (``import synthetic``)


@cache
def _module(path: Path) -> Module:
    tree = ast.parse(path.read_text(), filename=str(path))
    functions: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, FUNCTION):
            functions.setdefault(node.name, node)
    imported, support = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and (path.parent / f"{node.module}.py").exists():
            imported.update({alias.asname or alias.name: node.module for alias in node.names})
        elif isinstance(node, ast.Import):
            support |= {a.asname or a.name for a in node.names if (path.parent / f"{a.name}.py").exists()}
    return Module(functions, imported, frozenset(support))


def _asserts(path: Path, name: str, seen: frozenset[tuple[Path, str]] = frozenset()) -> bool:
    """Whether the function ``name`` of ``path`` asserts, itself or through a helper it calls."""
    module, seen = _module(path), seen | {(path, name)}
    if name in module.functions:
        return _body_asserts(path, [module.functions[name]], seen)
    if name in module.imported:
        return _asserts(path.parent / f"{module.imported[name]}.py", name, seen)
    return False


def _body_asserts(path: Path, nodes: Iterable[ast.AST], seen: frozenset[tuple[Path, str]] = frozenset()) -> bool:
    """Whether any of ``nodes`` (a function, a block of statements) asserts, helpers followed."""
    module = _module(path)
    for node in (sub for top in nodes for sub in ast.walk(top)):
        if isinstance(node, ast.Assert) and not isinstance(node.test, ast.Constant):
            return True
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        if called is None:
            continue
        if called.startswith("assert") or (owner == "pytest" and called in PYTEST_ASSERTIONS):
            return True
        if owner is None and (path, called) not in seen and _asserts(path, called, seen):
            return True
        if owner in module.support and _asserts(path.parent / f"{owner}.py", called, seen):
            return True
    return False


def _test_functions(path: Path) -> list[ast.FunctionDef]:
    """The ``test_*`` functions of a file: at its top level and in its ``Test*`` classes."""
    tree = ast.parse(path.read_text(), filename=str(path))
    candidates = [n for n in tree.body if isinstance(n, FUNCTION)]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        candidates += [n for n in cls.body if isinstance(n, FUNCTION)]
    return [n for n in candidates if n.name.startswith("test_")]


def _unchecked_loops(path: Path, test: ast.FunctionDef) -> list[int]:
    """The lines of the loops of ``test`` that call their loop variable, discard what it returns
    and assert nothing."""
    lines = []
    for node in ast.walk(test):
        if not isinstance(node, ast.For | ast.AsyncFor):
            continue
        targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        calls_target = any(
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Name)
            and s.value.func.id in targets
            for s in node.body
        )
        if calls_target and not _body_asserts(path, node.body):
            lines.append(node.lineno)
    return lines


def unasserted_tests(folder: Path = TESTS) -> list[str]:
    """``file::test`` of every test function of ``folder/test_*.py`` that asserts nothing, and
    ``file::test:line`` of each loop of a test that calls functions in turn and asserts nothing."""
    found = []
    for path in sorted(folder.glob("test_*.py")):
        for test in _test_functions(path):
            if not _asserts(path, test.name):
                found.append(f"{path.name}::{test.name}")
            else:
                found += [f"{path.name}::{test.name}:{line}" for line in _unchecked_loops(path, test)]
    return found


def test_every_test_asserts_something():
    found = unasserted_tests()
    assert not found, "tests that assert nothing (file::test, or file::test:line of a loop):\n" + "\n".join(found)


def test_the_checker_tells_a_test_that_asserts_from_one_that_does_not(tmp_path):
    (tmp_path / "helpers.py").write_text("def expect_two(x):\n    assert x == 2\n")
    (tmp_path / "test_toy.py").write_text(
        "import pytest\n"
        "import numpy as np\n"
        "import helpers\n"
        "from helpers import expect_two\n"
        "def _local(x):\n    expect_two(x)\n"
        "def _silent(x):\n    return x + 1\n"
        "def test_plain():\n    assert 1 + 1 == 2\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n"
        "def test_numpy():\n    np.testing.assert_allclose(1.0, 1.0)\n"
        "def test_through_helpers():\n    _local(2)\n"
        "def test_through_a_module():\n    helpers.expect_two(2)\n"
        "class TestGroup:\n    def test_method(self):\n        assert self\n"
        "def test_calls_only():\n    _silent(1)\n"
        "def test_constant():\n    _silent(1)\n    assert True\n"
        "def test_empty():\n    pass\n"
        "def test_loop_checked():\n    for f in (_silent, abs):\n        assert f(1) == 2 or f(1) == 1\n"
        "def test_loop_unchecked():\n    assert _silent(1) == 2\n    for f in (_silent, abs):\n        f(1)\n"
    )
    assert unasserted_tests(tmp_path) == [
        "test_toy.py::test_calls_only",
        "test_toy.py::test_constant",
        "test_toy.py::test_empty",
        "test_toy.py::test_loop_unchecked:35",
    ]
