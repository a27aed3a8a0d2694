"""The work of a distributed extraction: jobs, runs, tasks of whole batches, and the Ray actor
that keeps a model loaded and computes them."""

from __future__ import annotations

import fcntl
import gc
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis import data
from analysis.core import cache, registry
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.data.data_errors import DataError
from analysis.extract import models, preparation, runner
from analysis.store import RunKey

MAX_CPUS_PER_GPU_WORKER = 4


@dataclass(frozen=True)
class Job:
    """One (model, condition) to extract; ``template`` None takes the model registry's."""

    model: str
    template: str | None
    spec: str


@dataclass(frozen=True)
class Run:
    """One (model, condition) as the driver planned it: what an actor needs to compute its samples."""

    model: str  # as the user named it (rows carry this name)
    model_source: str  # what an actor loads: an offline name, an absolute folder or a hub id
    template: str
    spec: str  # condition key, or absolute path of a JSON file
    key: RunKey
    identity: dict

    @property
    def model_key(self) -> tuple[str, str]:
        return (self.model_source, self.template)


@dataclass(frozen=True)
class Task:
    """One unit of work: cut a run's missing samples into batches ("batches"), or compute a shard
    ("compute"); ``matched``: the loss-matched condition's run whose draws the same passes make
    (``run`` being its reference's, ``runner.compute_samples``)."""

    kind: str
    run: Run
    indices: tuple[int, ...]
    matched: Run | None = None

    def runs(self) -> tuple[Run, ...]:
        """The runs whose rows the task computes."""
        return (self.run,) if self.matched is None else (self.run, self.matched)


@dataclass
class TaskResult:
    """What an actor sends back: statistics and sample indices only, never tensors."""

    batches: list[tuple[int, ...]]  # "batches" tasks: the batches runner.extract would form
    rows: pd.DataFrame | None  # "compute" tasks: rows in the store's schema
    skipped: list[dict]
    compute_seconds: float
    load_seconds: float
    host: str
    restarted: bool  # first task of an actor process that replaced a dead one


@dataclass(frozen=True)
class WorkerSettings:
    """What every actor needs besides its tasks."""

    extraction: ExtractionSettings  # device "cuda" (Ray assigns the GPU) or "cpu", batch size set
    data_dir: str
    trust_remote_code: bool


@dataclass(frozen=True)
class WorkerLayout:
    """How many actors the cluster can hold, and what each asks Ray for."""

    count: int
    num_cpus: int
    num_gpus: int

    @property
    def device(self) -> str:
        return "cuda" if self.num_gpus else "cpu"

    def describe(self) -> str:
        kind = f"1 GPU + {self.num_cpus} CPU" if self.num_gpus else f"{self.num_cpus} CPU"
        return f"{self.count} worker(s) of {kind} each"


def worker_layout(nodes: Sequence[dict], device: str = "auto", threads: int | None = None) -> WorkerLayout:
    """Actors that fit the cluster's live nodes (``ray.nodes()``): one per GPU, else CPU actors.

    GPU actors ask for one GPU and an equal share of their node's CPUs (at most
    ``MAX_CPUS_PER_GPU_WORKER``); CPU actors take ``threads`` CPUs, by default as many as
    the smallest node has, so that each node holds one model and computes with all its cores, as a
    local run does. Nothing is asked that no node has.
    """
    if device not in ("auto", "cpu") and not device.startswith("cuda"):
        raise StudyError(f"device must be auto, cpu or cuda, not {device!r}")
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive", True)]
    cpus_gpus = [(int(res.get("CPU", 0)), int(res.get("GPU", 0))) for res in alive]
    gpu_nodes = [(cpus, gpus) for cpus, gpus in cpus_gpus if gpus > 0]
    if device.startswith("cuda") and not gpu_nodes:
        raise StudyError(
            "CUDA workers were asked for, but no node of the Ray cluster has a GPU; use device auto or cpu"
        )
    if gpu_nodes and device != "cpu":
        share = threads
        if share is None:
            share = min(MAX_CPUS_PER_GPU_WORKER, *(cpus // gpus for cpus, gpus in gpu_nodes))
        count = sum(min(gpus, cpus // share) if share else gpus for cpus, gpus in gpu_nodes)
        if count == 0:
            raise StudyError(f"no GPU node of the Ray cluster has {share} CPUs per GPU; ask for fewer CPUs per worker")
        return WorkerLayout(count, share, 1)
    cpu_counts = [cpus for cpus, _ in cpus_gpus if cpus > 0]
    if not cpu_counts:
        raise StudyError("the Ray cluster reports no CPU and no GPU: no worker can be placed")
    size = threads or min(cpu_counts)
    count = sum(cpus // size for cpus in cpu_counts)
    if count == 0:
        raise StudyError(f"no node of the Ray cluster has {size} CPUs; ask for fewer CPUs per worker")
    return WorkerLayout(count, size, 0)


def planned_run(plan: runner.RunPlan, model: str, template: str, spec: str) -> Run:
    """The driver's plan as actors on any node can use it (absolute paths for local files)."""
    local = model not in registry.OFFLINE_MODELS and Path(model).exists()
    source = str(Path(model).resolve()) if local else model
    return Run(
        model, source, template, str(Path(spec).resolve()) if spec.endswith(".json") else spec, plan.key, plan.identity
    )


def shards_of(batches: Sequence[Sequence[int]], shard_size: int) -> list[tuple[int, ...]]:
    """Consecutive whole batches grouped into shards of at least ``shard_size`` samples (the last may be smaller).

    A shard starts on a batch boundary, so re-batching its samples gives back the same batches:
    every sample is computed in the same padded batch as in a single-process run.
    """
    shards: list[tuple[int, ...]] = []
    current: list[int] = []
    for batch in batches:
        current += batch
        if len(current) >= shard_size:
            shards.append(tuple(sorted(current)))
            current = []
    if current:
        shards.append(tuple(sorted(current)))
    return shards


class ShardWorker:
    """Runs tasks as a Ray actor, keeping the model of its last task loaded."""

    def __init__(self, settings: WorkerSettings):
        self.settings = settings
        self.loaded: models.LoadedModel | None = None
        self.holding: tuple[str, str] | None = None
        self.first_task = True

    def run(self, task: Task) -> TaskResult:
        """The batches, or the rows and skips, of one task."""
        load_seconds = self._hold(task.run.model_key)
        loaded = self.loaded
        assert loaded is not None, "_hold leaves the task's model loaded"
        started = time.perf_counter()
        plan = self._plan(task, task.run)
        matched = None if task.matched is None else self._plan(task, task.matched)
        batches: list[tuple[int, ...]] = []
        frames: list[pd.DataFrame] = []
        skipped: list[dict] = []
        if task.kind == "batches":
            prepared, skipped, _ = runner.prepared_pass(
                loaded, plan, plan.todo, data_dir=self.settings.data_dir, matched=matched
            )
            extraction = self.settings.extraction
            # the driver's batch size, where it gave one
            batch_size = preparation.batch_size_for(loaded.device, extraction.batch_size)
            groups = preparation.length_sorted_batches(prepared, batch_size, extraction.token_budget)
            batches = [tuple(sample.index for sample in group) for group in groups]
        else:
            for rows, skips in runner.compute_samples(
                loaded, plan, plan.todo, self.settings.extraction, data_dir=self.settings.data_dir, matched=matched
            ):
                if rows is not None:
                    frames.append(rows)
                skipped.extend(skips)
        restarted = self.first_task and _actor_was_restarted()
        self.first_task = False
        return TaskResult(
            batches,
            pd.concat(frames, ignore_index=True) if frames else None,
            skipped,
            time.perf_counter() - started,
            load_seconds,
            socket.gethostname(),
            restarted,
        )

    def _plan(self, task: Task, run: Run) -> runner.RunPlan:
        """The driver's plan of one of the task's runs with this node's copy of the data file, which
        must be the same file."""
        identity = run.identity
        resolved = data.resolve(run.spec, self.settings.data_dir)
        if resolved.sha256 != identity["data_sha256"]:
            raise DataError(
                f"{resolved.path}: on host {socket.gethostname()} this file's sha256 is {resolved.sha256[:12]}…, "
                f"not {identity['data_sha256'][:12]}… as where the run was planned; give every node the same data"
            )
        return runner.RunPlan(run.spec, resolved, run.key, identity, len(task.indices), list(task.indices))

    def _hold(self, model_key: tuple[str, str]) -> float:
        """Load the model unless it is the one held; the seconds spent loading."""
        if self.holding == model_key:
            return 0.0
        self.loaded, self.holding = None, None
        gc.collect()
        if self.settings.extraction.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
        started = time.perf_counter()
        source, template = model_key
        with _offline_cache_lock(source):
            self.loaded = models.load(
                source,
                template=template,
                device=self.settings.extraction.device,
                trust_remote_code=self.settings.trust_remote_code,
            )
        self.holding = model_key
        return time.perf_counter() - started


def _actor_was_restarted() -> bool:
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():  # not in an actor (asking Ray would start or join one)
        return False
    context = ray.get_runtime_context()
    return context.get_actor_id() is not None and bool(context.was_current_actor_reconstructed)


@contextmanager
def _offline_cache_lock(source: str) -> Iterator[None]:
    """Serialise the first load of an offline model on a node: it writes the node's shared cache."""
    if source not in registry.OFFLINE_MODELS:
        yield
        return
    root = cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{registry.model_slug(source)}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
