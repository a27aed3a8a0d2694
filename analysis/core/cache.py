"""The project's cache folder, and the simulated tables kept in it between book builds.

The reproducibility page's calibration tables are simulations of the book's own rules: they depend
on nothing but the code, the number of simulated runs and the seed, and take minutes (G1's rule
most). ``simulated_table`` computes a table once and keeps it as Parquet under
``cache_root()/tables``, keyed by the function, its arguments, a digest of every source file of
``analysis`` and the versions of the numerical libraries: any change to the code computes it
afresh, and every build of any profile on one machine shows the same numbers the first computed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path

import pandas as pd

CACHE_ENV = "LAYER_GRADIENT_CACHE"
PACKAGE = Path(__file__).resolve().parents[1]
LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas")


def cache_root() -> Path:
    """Where the project caches what it can compute again ($LAYER_GRADIENT_CACHE or ~/.cache/layer-gradient):
    dequantised offline models, simulated tables."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "layer-gradient")


@cache
def code_digest() -> str:
    """sha256 over every source file of the ``analysis`` package (path and bytes) and the versions
    of the numerical libraries: what a simulated table depends on besides its arguments."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for library in LIBRARIES:
        digest.update(f"{library}=={metadata.version(library)}\0".encode())
    return digest.hexdigest()


def simulated_table(make: Callable[..., pd.DataFrame], *, reps: int, seed: int) -> pd.DataFrame:
    """``make(reps=reps, seed=seed)``, read from the cache where this code computed it before, else
    computed and kept (written whole, then renamed: a build that stops midway leaves no part)."""
    name = f"{make.__module__}.{make.__qualname__}"
    key = hashlib.sha256(f"{name}\0{reps}\0{seed}\0{code_digest()}".encode()).hexdigest()[:32]
    path = cache_root() / "tables" / f"{make.__qualname__}-{key}.parquet"
    if path.is_file():
        return pd.read_parquet(path)
    table = make(reps=reps, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as part:
        table.to_parquet(part.name, index=False)
    os.replace(part.name, path)
    return pd.read_parquet(path)
