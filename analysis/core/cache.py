"""The project's cache folder, and the simulated tables kept between book builds.

The reproducibility page's calibration tables are simulations of the book's own rules: they depend
on nothing but the code they run, the number of simulated runs and the seed, and take minutes (the
false "holds" of every rule most). ``simulated_table`` keys each table by its function, its
arguments, the versions of the numerical libraries and the source of the modules its function's
module imports inside ``analysis``, directly or through others (``module_closure``: the package
above each module included, whose ``__init__`` runs first; imports inside functions and under
``TYPE_CHECKING`` too). A table's function must therefore import what it computes with, not receive
it: a change to a rule or a simulation changes the key, one to a report module, a notebook or the
book does not.

A table is read from the tables committed with the code (``COMMITTED``, ``book/_data/simulated``,
written by ``make simulated-tables``, ``commit_tables``) where their manifest records the same code
and library versions, else from the cache (``cache_root()/tables``), else computed and kept there:
a fresh clone with the committed libraries' versions computes none, and every build on one machine
shows the numbers the first computed. A test checks that the committed tables' code keys are the
current code's.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

import pandas as pd

CACHE_ENV = "LAYER_GRADIENT_CACHE"
PACKAGE = Path(__file__).resolve().parents[1]
LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas")
COMMITTED = PACKAGE.parent / "book" / "_data" / "simulated"
MANIFEST = "tables.json"  # in ``COMMITTED``: per table, its code key and the libraries' versions


def cache_root() -> Path:
    """Where the project caches what it can compute again ($LAYER_GRADIENT_CACHE or ~/.cache/layer-gradient):
    dequantised offline models, simulated tables."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "layer-gradient")


def _source(module: str, root: Path) -> Path | None:
    """The file of ``module`` (a dotted name inside the package at ``root``), None for a name that is not a module."""
    parts = module.split(".")
    if parts[0] != root.name:
        return None
    base = root.joinpath(*parts[1:])
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imported(module: str, path: Path) -> set[str]:
    """The dotted names ``module`` (at ``path``) imports anywhere in its source, each ``from`` import
    as its module and as module.name (a name may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                above = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(above + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _with_packages(module: str) -> list[str]:
    """``module`` and every package above it ("a.b.c": "a", "a.b", "a.b.c")."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@cache
def module_closure(module: str, *, root: Path = PACKAGE) -> tuple[str, ...]:
    """The modules of the package at ``root`` that importing ``module`` runs, sorted: it, the
    packages above it, what they import inside the package, and so on."""
    seen: set[str] = set()
    waiting = _with_packages(module)
    while waiting:
        name = waiting.pop()
        path = _source(name, root)
        if name in seen or path is None:
            continue
        seen.add(name)
        for imported in _imported(name, path):
            if _source(imported, root) is not None:
                waiting.extend(_with_packages(imported))
    return tuple(sorted(seen))


@cache
def code_digest(module: str, *, root: Path = PACKAGE) -> str:
    """sha256 over the source (name and bytes) of every module of ``module_closure(module)``."""
    digest = hashlib.sha256()
    for name in module_closure(module, root=root):
        path = _source(name, root)
        assert path is not None, name
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    """The versions of the numerical libraries a simulated table's numbers depend on."""
    return {library: metadata.version(library) for library in LIBRARIES}


def _name(make: Callable[..., pd.DataFrame]) -> str:
    return f"{make.__module__}.{make.__qualname__}"


def code_key(make: Callable[..., pd.DataFrame], *, reps: int, seed: int, root: Path = PACKAGE) -> str:
    """What ``make(reps=reps, seed=seed)`` depends on in this package: its name, its arguments and
    the source of its module's closure (``code_digest``)."""
    text = f"{_name(make)}\0{reps}\0{seed}\0{code_digest(make.__module__, root=root)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def table_key(make: Callable[..., pd.DataFrame], *, reps: int, seed: int) -> str:
    """``code_key`` with the numerical libraries' versions: the cache's key of the table."""
    versions = "\0".join(f"{k}=={v}" for k, v in library_versions().items())
    return hashlib.sha256(f"{code_key(make, reps=reps, seed=seed)}\0{versions}".encode()).hexdigest()[:32]


def manifest(folder: Path | None = None) -> dict[str, dict]:
    """The committed tables' manifest (in ``folder``, default ``COMMITTED``): table name -> {"reps",
    "seed", "code", "libraries", "file"} (empty where there is none)."""
    path = (folder or COMMITTED) / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def committed(make: Callable[..., pd.DataFrame], *, reps: int, seed: int, folder: Path | None = None) -> Path | None:
    """The committed file of ``make(reps=reps, seed=seed)`` (in ``folder``, default ``COMMITTED``)
    where the manifest records this code's key and these libraries' versions for it, else None."""
    folder = folder or COMMITTED
    entry = manifest(folder).get(_name(make))
    if entry is None or entry.get("code") != code_key(make, reps=reps, seed=seed):
        return None
    if entry.get("libraries") != library_versions():
        return None
    path = folder / entry["file"]
    return path if path.is_file() else None


def _write(table: pd.DataFrame, path: Path) -> None:
    """``table`` as Parquet at ``path``, written whole, then renamed: a build that stops midway leaves no part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as part:
        table.to_parquet(part.name, index=False)
    os.replace(part.name, path)


def simulated_table(make: Callable[..., pd.DataFrame], *, reps: int, seed: int) -> pd.DataFrame:
    """``make(reps=reps, seed=seed)``: the committed table where it is this code's (``committed``),
    else the cached one where this code computed it before, else computed and kept in the cache."""
    kept = committed(make, reps=reps, seed=seed)
    if kept is not None:
        return pd.read_parquet(kept)
    path = cache_root() / "tables" / f"{make.__qualname__}-{table_key(make, reps=reps, seed=seed)}.parquet"
    if path.is_file():
        return pd.read_parquet(path)
    _write(make(reps=reps, seed=seed), path)
    return pd.read_parquet(path)


def commit_tables(
    makes: Sequence[Callable[..., pd.DataFrame]], *, reps: int, seed: int, folder: Path | None = None
) -> list[Path]:
    """Write each ``make(reps=reps, seed=seed)`` (through the cache) into ``folder`` (default
    ``COMMITTED``) as ``<name>.parquet``, and a manifest of these tables alone, each with its code
    key and the libraries' versions (the folder's other tables removed); the files' paths."""
    folder = folder or COMMITTED
    entries, paths = {}, []
    for make in makes:
        path = folder / f"{make.__qualname__}.parquet"
        _write(simulated_table(make, reps=reps, seed=seed), path)
        entries[_name(make)] = {
            "reps": reps,
            "seed": seed,
            "code": code_key(make, reps=reps, seed=seed),
            "libraries": library_versions(),
            "file": path.name,
        }
        paths.append(path)
    for stale in set(folder.glob("*.parquet")) - set(paths):
        stale.unlink()
    (folder / MANIFEST).write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    return paths
