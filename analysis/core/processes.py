"""Work spread over the cores this process may use, one process per core.

Each job is a call of a module-level function with its own arguments (its own seed, where it draws),
so that what it returns does not depend on how many processes compute it; processes are spawned,
sharing no state with the caller, and each exits when the caller dies (a stopped run leaves no idle
workers behind). With one core the jobs run here, one after another.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

PARENT_POLL_S = 1.0


def available_cpus() -> int:
    """Cores this process may run on (its affinity where the system says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers_for(count: int) -> int:
    """How many of ``count`` jobs run at once: one per core this process may use."""
    return max(1, min(count, available_cpus()))


def spawned_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh processes (spawned, not forked: the caller's threads and open
    files stay its own), each of which exits when this process dies."""
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with_parent,
        initargs=(os.getpid(),),
    )


def _exit_with_parent(parent: int) -> None:
    """Start a watch that ends this worker once ``parent`` is gone (the worker is then adopted by
    another process); a pool's workers otherwise wait for work forever when their caller is killed."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # ends the worker, its pool's threads included


def each(function: Callable[..., Any], jobs: Sequence[dict]) -> list:
    """``function(**job)`` of every job, in the jobs' order, as many at once as ``workers_for`` allows."""
    workers = workers_for(len(jobs))
    if workers == 1:
        return [function(**job) for job in jobs]
    with spawned_pool(workers) as pool:
        return list(pool.map(_call, [function] * len(jobs), jobs))


def _call(function: Callable[..., Any], job: dict) -> Any:
    return function(**job)
