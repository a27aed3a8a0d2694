"""How many torch CPU threads a run uses: the cores free when it starts, unless the user says.

Threads that wait for each other at every operation lose their turn on a core that another
process keeps busy: on a two-core machine with one other busy process, torch's default of two
threads made runs 3-5 times slower than one thread. So a run without an explicit number takes the
cores that are free when it starts: the machine's cores less the busy ones, the cores' use over a
one-second sample, rounded, and at least one. The one-minute load average is recorded beside it but
does not decide: it lags, and counted a package install that had just finished as a busy core (a
run started right after `make setup` took one thread of two free cores). The choice goes into the
run log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch

from analysis.core.processes import available_cpus

SAMPLE_SECONDS = 1.0  # how long the cores' use is sampled


@dataclass(frozen=True)
class ThreadChoice:
    """The threads a run uses and why: ``source`` is "explicit" (the user's or the profile's
    number) or "free cores" (chosen here from ``cpus`` and ``busy_sampled``; ``load_1min`` is
    recorded, not used)."""

    threads: int
    source: str
    cpus: int | None = None
    load_1min: float | None = None
    busy_sampled: float | None = None  # cores' use over the sample, in cores

    def as_dict(self) -> dict:
        return asdict(self)


def load_average() -> float | None:
    """The one-minute load average, or None where the system has none."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def sampled_busy_cores(seconds: float = SAMPLE_SECONDS) -> float:
    """Cores in use over a short sample (the sum of the per-core shares), by any process."""
    import psutil  # here, so that the extraction imports on a machine without it (benchmarks/gpu_check.py)

    return float(sum(psutil.cpu_percent(interval=seconds, percpu=True)) / 100.0)


def free_cores(cpus: int, busy_sampled: float | None) -> int:
    """``cpus`` less the busy cores (the sampled use, rounded), at least 1."""
    return max(1, int(cpus) - int(round(busy_sampled or 0.0)))


def choose_threads(
    requested: int | None,
    cpus: Callable[[], int] = available_cpus,
    load: Callable[[], float | None] = load_average,
    busy: Callable[[], float] = sampled_busy_cores,
) -> ThreadChoice:
    """``requested`` where given; else the free cores (``free_cores``), never more than torch's
    own default (its count of physical cores)."""
    if requested:
        return ThreadChoice(int(requested), "explicit")
    count, load_1min, busy_sampled = cpus(), load(), busy()
    threads = min(free_cores(count, busy_sampled), max(1, torch.get_num_threads()))
    return ThreadChoice(threads, "free cores", count, load_1min, busy_sampled)


@contextmanager
def torch_threads(
    threads: int | None, choose: Callable[[int | None], ThreadChoice] = choose_threads
) -> Iterator[ThreadChoice]:
    """Run with this many torch CPU threads (None: the cores free now, ``choose_threads``),
    restoring the previous number; yields the choice, for the run log."""
    choice = choose(threads)
    previous = torch.get_num_threads()
    torch.set_num_threads(choice.threads)
    try:
        yield choice
    finally:
        torch.set_num_threads(previous)
