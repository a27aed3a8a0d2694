"""Faults injected into child processes by the reliability and distributed tests.

A process started with this folder on its ``PYTHONPATH`` (see :func:`child_environment`) runs
``sitecustomize.py`` from it at start-up, which calls :func:`install`: the modules below are then
patched just after they are imported. Each fault is read from the environment at the moment it
would strike, so a fork server may set it per child; with none set the patched code behaves as
the original. Production code holds no trace of them.

- ``LAYER_GRADIENT_WRITE_PAUSE=SECONDS``: every part written to a results store stalls that long
  just before and just after its rename (``analysis.store.store_files._fsync_and_replace``), so that a test
  can interrupt a write there.
- ``LAYER_GRADIENT_WRITE_HOLD=FILE``: the same stalls last while FILE exists.
- ``LAYER_GRADIENT_WORKER_CRASH=N@DIR``: after each batch of the extraction loop
  (``analysis.extract.runner.compute_samples``) the process exits abruptly while DIR holds fewer than N
  marker files, adding one per exit; set for the Ray workers of a test.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parent
WRITE_PAUSE_ENV = "LAYER_GRADIENT_WRITE_PAUSE"
WRITE_HOLD_ENV = "LAYER_GRADIENT_WRITE_HOLD"
CRASH_ENV = "LAYER_GRADIENT_WORKER_CRASH"


def child_environment(**variables: str) -> dict[str, str]:
    """Environment entries that make a child process load the faults (``PYTHONPATH``) and set them."""
    path = os.pathsep.join(p for p in (str(FOLDER), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, **variables}


def pause_in_write() -> None:
    """The stall of ``$LAYER_GRADIENT_WRITE_PAUSE`` seconds, then while ``$LAYER_GRADIENT_WRITE_HOLD`` exists."""
    seconds = float(os.environ.get(WRITE_PAUSE_ENV) or 0)
    if seconds > 0:
        time.sleep(seconds)
    hold = os.environ.get(WRITE_HOLD_ENV)
    while hold and os.path.exists(hold):
        time.sleep(0.01)


def crash_if_due() -> None:
    """Exit at once (no cleanup) while the directory of ``$LAYER_GRADIENT_WORKER_CRASH`` holds too few markers."""
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return
    times, directory = spec.split("@", 1)
    if len(list(Path(directory).glob("crash-*"))) < int(times):
        (Path(directory) / f"crash-{uuid.uuid4().hex}").touch()
        os._exit(1)


def patch_store(store: ModuleType) -> None:
    """Stall around the rename of every part file of the results store."""
    replace = store._fsync_and_replace

    @functools.wraps(replace)
    def stalled(temporary: Path, final: Path) -> None:
        part = Path(final).name.startswith("part-")
        if part:
            pause_in_write()
        replace(temporary, final)
        if part:
            pause_in_write()

    store._fsync_and_replace = stalled


def patch_runner(runner: ModuleType) -> None:
    """Give the extraction loop a chance to crash after each batch it yields."""
    compute = runner.compute_samples

    @functools.wraps(compute)
    def crashing(*args, **kwargs) -> Iterator:
        for batch in compute(*args, **kwargs):
            yield batch
            crash_if_due()

    runner.compute_samples = crashing


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "analysis.store.store_files": patch_store,
    "analysis.extract.runner": patch_runner,
}


class PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds the modules of ``PATCHES`` as usual and patches each once its code has run."""

    def find_spec(self, name: str, path=None, target=None):
        if name not in PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            PATCHES[name](module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Patch the modules of ``PATCHES`` when they are imported (at once if they already are); once."""
    if any(isinstance(finder, PatchAfterImport) for finder in sys.meta_path):
        return
    for name, patch in PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, PatchAfterImport())
