"""Extraction on many GPUs and machines with Ray, storing exactly what a single-process run stores.

The driver (the process that calls :func:`run_extraction`) plans every (model, condition) from
the results store and hands the work to Ray actors: one per GPU where the cluster has GPUs, else
CPU actors of an explicit size. An actor keeps one model loaded and is given work for that model
while there is any, so a model is loaded once per actor, not once per shard. The first task of a
(model, condition) returns the batches ``runner.extract`` would form from its missing samples;
the driver groups whole batches into shards, so every sample is computed in the same padded batch
as in a single-process run and gets the same values, bit for bit on the same hardware and thread
count. Actors return statistics (DataFrames of a few thousand rows), never tensors. Only the
driver writes the store, one atomic part per shard, while it holds the lock of every run it
writes, so a local run of the same conditions is refused meanwhile. A shard lost with its actor's
process is run again by Ray on the restarted actor (a bounded number of times), then reported as
failed; a driver restarted after a crash plans again from the store and computes only what is
missing.

Ray is an optional dependency (``pip install .[distributed]``), imported only when a run starts.
"""

from __future__ import annotations

import fcntl
import gc
import logging
import math
import os
import socket
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from analysis import data, models, runner
from analysis.store import ResultsStore, RunKey

INSTALL_HINT = "pip install '.[distributed]' (or: pip install 'ray[default]')"
MAX_CPUS_PER_GPU_WORKER = 4


class DistributedError(RuntimeError):
    """Ray is missing, unreachable, or cannot run the extraction as asked."""


def require_ray():
    """The ``ray`` module, or a DistributedError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise DistributedError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


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
    """One unit of work: cut a run's missing samples into batches ("batches"), or compute a shard ("compute")."""

    kind: str
    run: Run
    indices: tuple[int, ...]


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

    device: str  # "cuda" (Ray assigns the GPU) or "cpu"
    batch_size: int
    token_budget: int
    data_dir: str
    entry_stats: bool
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


def worker_layout(nodes: Sequence[dict], device: str = "auto", cpus_per_worker: int | None = None) -> WorkerLayout:
    """Actors that fit the cluster's live nodes (``ray.nodes()``): one per GPU, else CPU actors.

    GPU actors ask for one GPU and an equal share of their node's CPUs (at most
    ``MAX_CPUS_PER_GPU_WORKER``); CPU actors take ``cpus_per_worker`` CPUs, by default as many as
    the smallest node has, so that each node holds one model and computes with all its cores, as a
    local run does. Nothing is asked that no node has.
    """
    if device not in ("auto", "cpu") and not device.startswith("cuda"):
        raise DistributedError(f"device must be auto, cpu or cuda, not {device!r}")
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive", True)]
    cpus_gpus = [(int(res.get("CPU", 0)), int(res.get("GPU", 0))) for res in alive]
    gpu_nodes = [(cpus, gpus) for cpus, gpus in cpus_gpus if gpus > 0]
    if device.startswith("cuda") and not gpu_nodes:
        raise DistributedError(
            "CUDA workers were asked for, but no node of the Ray cluster has a GPU; use device auto or cpu"
        )
    if gpu_nodes and device != "cpu":
        share = cpus_per_worker
        if share is None:
            share = min(MAX_CPUS_PER_GPU_WORKER, *(cpus // gpus for cpus, gpus in gpu_nodes))
        count = sum(min(gpus, cpus // share) if share else gpus for cpus, gpus in gpu_nodes)
        if count == 0:
            raise DistributedError(
                f"no GPU node of the Ray cluster has {share} CPUs per GPU; ask for fewer CPUs per worker"
            )
        return WorkerLayout(count, share, 1)
    cpu_counts = [cpus for cpus, _ in cpus_gpus if cpus > 0]
    if not cpu_counts:
        raise DistributedError("the Ray cluster reports no CPU and no GPU: no worker can be placed")
    size = cpus_per_worker or min(cpu_counts)
    count = sum(cpus // size for cpus in cpu_counts)
    if count == 0:
        raise DistributedError(f"no node of the Ray cluster has {size} CPUs; ask for fewer CPUs per worker")
    return WorkerLayout(count, size, 0)


def planned_run(plan: runner.RunPlan, model: str, template: str, spec: str) -> Run:
    """The driver's plan as actors on any node can use it (absolute paths for local files)."""
    local = model not in models.OFFLINE_MODELS and Path(model).exists()
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
        started = time.perf_counter()
        plan = self._plan(task)
        batches, frames, skipped = [], [], []
        if task.kind == "batches":
            prepared, skips = runner.prepare_samples(
                self.loaded, plan.resolved, plan.todo, plan.identity["max_length"], self.settings.data_dir
            )
            groups = runner.length_sorted_batches(prepared, self.settings.batch_size, self.settings.token_budget)
            batches = [tuple(sample.index for sample in group) for group in groups]
            skipped = [runner.skip_row(plan.identity, index, reason) for index, reason in skips.items()]
        else:
            for rows, skips in runner.compute_samples(
                self.loaded,
                plan,
                plan.todo,
                self.settings.batch_size,
                self.settings.token_budget,
                self.settings.data_dir,
                self.settings.entry_stats,
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

    def _plan(self, task: Task) -> runner.RunPlan:
        """The driver's plan with this node's copy of the data file, which must be the same file."""
        identity = task.run.identity
        resolved = data.resolve(task.run.spec, self.settings.data_dir)
        if resolved.sha256 != identity["data_sha256"]:
            raise data.DataError(
                f"{resolved.path}: on host {socket.gethostname()} this file's sha256 is {resolved.sha256[:12]}…, "
                f"not {identity['data_sha256'][:12]}… as where the run was planned; give every node the same data"
            )
        return runner.RunPlan(task.run.spec, resolved, task.run.key, identity, len(task.indices), list(task.indices))

    def _hold(self, model_key: tuple[str, str]) -> float:
        """Load the model unless it is the one held; the seconds spent loading."""
        if self.holding == model_key:
            return 0.0
        self.loaded, self.holding = None, None
        gc.collect()
        if self.settings.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
        started = time.perf_counter()
        source, template = model_key
        with _offline_cache_lock(source):
            self.loaded = models.load(source, template, self.settings.device, self.settings.trust_remote_code)
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
    if source not in models.OFFLINE_MODELS:
        yield
        return
    root = models.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{models.model_slug(source)}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class ShardFailure:
    """Samples that were not stored, and why."""

    model: str
    condition: str
    indices: tuple[int, ...]
    error: str


def index_ranges(indices: Sequence[int]) -> str:
    """Sample indices as compact ranges: ``0-3, 7, 9-10``."""
    parts, ordered = [], sorted(indices)
    start = previous = ordered[0] if ordered else None
    for index in ordered[1:] + [None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        parts.append(f"{start}" if start == previous else f"{start}-{previous}")
        start = previous = index
    return ", ".join(parts)


@dataclass
class ExtractionReport:
    """What a distributed extraction did, per condition, with the samples that failed."""

    conditions: list[runner.ConditionSummary] = field(default_factory=list)
    failures: list[ShardFailure] = field(default_factory=list)
    shards: int = 0
    shards_stored: int = 0
    restarts: int = 0
    layout: str = "no worker needed"
    hosts: set[str] = field(default_factory=set)
    load_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def records(self) -> list[dict]:
        """One plain record per (model, condition): requested, already_done, computed, skipped, seconds, failed."""
        return [
            {
                "model": s.model,
                "condition": s.condition,
                "requested": s.requested,
                "already_done": s.already_done,
                "computed": s.computed,
                "skipped": dict(s.skipped),
                "seconds": s.seconds,
                "failed": sum(
                    len(f.indices) for f in self.failures if (f.model, f.condition) == (s.model, s.condition)
                ),
            }
            for s in self.conditions
        ]

    def describe(self) -> str:
        """A per-model summary, with every failed shard listed."""
        computed = sum(s.computed for s in self.conditions)
        lines = [
            f"ray: {self.layout} on {len(self.hosts)} host(s); {self.shards_stored}/{self.shards} shards stored, "
            f"{computed} samples computed in {self.seconds:.1f} s"
            + (f"; {self.restarts} worker restart(s) after a crash" if self.restarts else "")
        ]
        for model in dict.fromkeys(s.model for s in self.conditions):
            mine = [s for s in self.conditions if s.model == model]
            skipped: dict[str, int] = {}
            for summary in mine:
                for why, n in summary.skipped.items():
                    skipped[why] = skipped.get(why, 0) + n
            done = sum(s.computed for s in mine)
            failed = [f for f in self.failures if f.model == model]
            lines.append(
                f"{model}: {len(mine)} condition(s), {done} computed, {sum(s.already_done for s in mine)} already stored, "
                f"skipped: {', '.join(f'{n} {why}' for why, n in skipped.items()) or 'none'}, "
                f"failed: {sum(len(f.indices) for f in failed)}; "
                f"{sum(s.seconds for s in mine) / done if done else math.nan:.2f} s/sample on a worker, "
                f"model loading {self.load_seconds.get(model, 0.0):.1f} s"
            )
            lines += [f"  failed {f.condition} samples {index_ranges(f.indices)}: {f.error}" for f in failed]
        if self.failures:
            lines.append("run the same command again to compute the failed samples (everything stored is kept)")
        return "\n".join(lines)


def run_extraction(
    jobs: Sequence[Job | tuple[str, str | None, str]],
    results_dir: str | os.PathLike,
    *,
    address: str | None = None,
    limit: int | None = None,
    max_length: int = 1024,
    batch_size: int | None = None,
    token_budget: int = 2048,
    data_dir: str | os.PathLike | None = None,
    shard_size: int = 32,
    entry_stats: bool = False,
    device: str = "auto",
    cpus_per_worker: int | None = None,
    max_workers: int | None = None,
    max_retries: int = 2,
    trust_remote_code: bool = False,
    num_cpus: int | None = None,
    object_store_memory: int | None = None,
    progress: bool = True,
) -> ExtractionReport:
    """Extract every job's condition into ``results_dir`` on a Ray cluster, storing what ``runner.extract`` stores.

    ``jobs`` are (model, template or None, condition key or JSON path). ``address`` "auto" or
    "HOST:PORT" joins a running cluster; None joins the one ``$RAY_ADDRESS`` names, if set, else
    starts a Ray instance on this machine for the run (``num_cpus``, default all;
    ``object_store_memory`` in bytes). If Ray is already initialised in this process, that
    instance is used as it is. ``limit``, ``max_length``, ``batch_size``,
    ``token_budget``, ``data_dir`` and ``entry_stats`` mean what they mean for ``runner.extract``,
    and samples are batched exactly as there. About ``shard_size`` samples (whole batches) make
    one unit of work and one stored part; a shard whose worker process dies is run again up to
    ``max_retries`` times. ``device``: auto (one actor per GPU where the cluster has GPUs), cpu
    or cuda; ``cpus_per_worker`` and ``max_workers`` override the actors' size and number.
    Raises DistributedError (Ray missing or unreachable), DataError, ModelError or StoreError
    (StoreBusy: another run holds one of these conditions) before computing anything; what fails
    on a worker (a model that does not load, a worker that keeps dying) is listed in the report's
    failures, not raised, and the rest of the run goes on. With ``progress`` a bar is shown and
    the report's summary printed at the end.
    """
    ray = require_ray()
    started = time.perf_counter()
    store = ResultsStore(results_dir)
    data_root = str(data.data_dir(data_dir).resolve())
    normalised = [job if isinstance(job, Job) else Job(*job) for job in jobs]
    templates = [models.resolve_template(job.model, job.template) for job in normalised]

    def plans() -> dict[RunKey, tuple[Job, str, runner.RunPlan]]:
        planned: dict[RunKey, tuple[Job, str, runner.RunPlan]] = {}
        for job, template in zip(normalised, templates):
            plan = runner.plan_run(job.model, template, job.spec, store, limit, max_length, data_dir)
            planned.setdefault(plan.key, (job, template, plan))
        return planned

    report = ExtractionReport()
    with ExitStack() as locks:
        for key in plans():
            locks.enter_context(store.lock(key))
        tasks: list[Task] = []
        summaries: dict[RunKey, runner.ConditionSummary] = {}
        for key, (job, template, plan) in plans().items():  # again under the locks: the store may have grown
            runner.check_same_data(store, plan)
            summaries[key] = runner.ConditionSummary(
                job.model,
                plan.identity["condition"],
                plan.requested,
                plan.requested - len(plan.todo),
                sha256_ok=plan.resolved.sha256_ok,
            )
            if plan.todo:
                tasks.append(Task("batches", planned_run(plan, job.model, template, job.spec), tuple(plan.todo)))
        report.conditions = list(summaries.values())
        if tasks:
            started_ray = _connect(ray, address, num_cpus, object_store_memory)
            try:
                layout = worker_layout(ray.nodes(), device, cpus_per_worker)
                count = min(layout.count, max_workers or layout.count, sum(len(t.indices) for t in tasks))
                report.layout = WorkerLayout(count, layout.num_cpus, layout.num_gpus).describe()
                settings = WorkerSettings(
                    layout.device,
                    runner.batch_size_for(layout.device, batch_size),
                    token_budget,
                    data_root,
                    entry_stats,
                    trust_remote_code,
                )
                _dispatch(
                    ray, tasks, layout, count, settings, shard_size, max_retries, store, summaries, report, progress
                )
            finally:
                if started_ray:
                    ray.shutdown()
    report.seconds = time.perf_counter() - started
    if progress:
        print(report.describe())
    return report


def _connect(ray, address: str | None, num_cpus: int | None, object_store_memory: int | None) -> bool:
    """Join or start Ray; True when this call started it (and must shut it down)."""
    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    address = address or os.environ.get("RAY_ADDRESS") or None
    try:
        if address is None:
            ray.init(
                address="local",
                num_cpus=num_cpus or os.cpu_count(),
                include_dashboard=False,
                object_store_memory=object_store_memory,
                **quiet,
            )
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ray.exceptions.RayError) as error:
        if _refused_for_token(error):
            raise DistributedError(
                f"the Ray cluster at {address} asks for a token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                "(or the file ~/.ray/auth_token) as on the cluster"
            ) from None
        where = "start a local Ray instance" if address is None else f"join the Ray cluster at {address}"
        raise DistributedError(f"cannot {where}: {str(error).strip().splitlines()[0]}") from None
    return True


def _refused_for_token(error: BaseException | None) -> bool:
    """Whether joining failed on the cluster's token authentication (Ray wraps that error in others)."""
    while error is not None:
        if type(error).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _dispatch(
    ray,
    tasks: list[Task],
    layout: WorkerLayout,
    count: int,
    settings: WorkerSettings,
    shard_size: int,
    max_retries: int,
    store: ResultsStore,
    summaries: dict[RunKey, runner.ConditionSummary],
    report: ExtractionReport,
    progress: bool,
) -> None:
    """Hand tasks to actors, preferring the model an actor holds; store each result as it comes.

    Ray restarts an actor whose process died and runs its task again (``max_task_retries``);
    only the driver writes the store.
    """
    from ray.exceptions import RayActorError, RayError, RayTaskError, WorkerCrashedError

    actor_class = ray.remote(ShardWorker).options(
        num_cpus=layout.num_cpus, num_gpus=layout.num_gpus, max_restarts=-1, max_task_retries=max_retries
    )
    actors = [actor_class.remote(settings) for _ in range(count)]
    holding: list[tuple[str, str] | None] = [None] * count
    queues: dict[tuple[str, str], deque[Task]] = {}
    for task in tasks:
        queues.setdefault(task.run.model_key, deque()).append(task)
    running: dict = {}  # object ref -> (actor number, task)
    bar = tqdm(total=sum(len(t.indices) for t in tasks), unit="sample", desc="ray extract", disable=not progress)

    def next_task(actor: int) -> Task | None:
        """A task of the model this actor holds, else of the model with most work per actor holding it."""
        own = queues.get(holding[actor])
        if own:
            return own.popleft()
        waiting = [model for model, queue in queues.items() if queue]
        if not waiting:
            return None
        model = max(waiting, key=lambda m: len(queues[m]) / (1 + holding.count(m)))
        return queues[model].popleft()

    def feed(actor: int) -> None:
        task = next_task(actor)
        if task is not None:
            holding[actor] = task.run.model_key
            running[actors[actor].run.remote(task)] = (actor, task)

    def fail(task: Task, error: str) -> None:
        report.failures.append(ShardFailure(task.run.model, task.run.identity["condition"], task.indices, error))

    try:
        for actor in range(count):
            feed(actor)
        while running:
            [ref], _ = ray.wait(list(running), num_returns=1)
            actor, task = running.pop(ref)
            try:
                result: TaskResult = ray.get(ref)
            except RayTaskError as error:  # the code raised: running it again would raise again
                fail(task, _task_error_text(error))
            except (RayActorError, WorkerCrashedError) as error:
                fail(task, f"worker died {max_retries + 1} time(s): {_first_line(error)}")
                holding[actor] = None
            except RayError as error:
                fail(task, _first_line(error))
                holding[actor] = None
            else:
                _take_result(store, task, result, summaries[task.run.key], report)
                if task.kind == "batches":
                    shards = [Task("compute", task.run, shard) for shard in shards_of(result.batches, shard_size)]
                    queues[task.run.model_key].extend(shards)
                    report.shards += len(shards)
                    bar.update(len(result.skipped))
                else:
                    report.shards_stored += 1
                    bar.update(len(task.indices))
            bar.set_postfix_str(
                f"shards {report.shards_stored}/{report.shards}"
                + (f", failed {len(report.failures)}" if report.failures else "")
            )
            feed(actor)
            busy = {n for n, _ in running.values()}
            for idle in range(count):  # new shards may have been queued for actors that had none
                if idle not in busy:
                    feed(idle)
    finally:
        bar.close()
        for handle in actors:
            ray.kill(handle)


def _take_result(
    store: ResultsStore, task: Task, result: TaskResult, summary: runner.ConditionSummary, report: ExtractionReport
) -> None:
    """Store a task's rows and skips as one part, and count them in the condition's summary."""
    if result.rows is not None or result.skipped:
        store.write(task.run.key, result.rows, pd.DataFrame(result.skipped) if result.skipped else None)
    summary.computed += 0 if result.rows is None else int(result.rows["sample_index"].nunique())
    for row in result.skipped:
        label = runner.skip_label(row["reason"])
        summary.skipped[label] = summary.skipped.get(label, 0) + 1
    summary.seconds += result.compute_seconds if task.kind == "compute" else 0.0
    report.hosts.add(result.host)
    report.restarts += int(result.restarted)
    report.load_seconds[task.run.model] = report.load_seconds.get(task.run.model, 0.0) + result.load_seconds


def _task_error_text(error) -> str:
    cause = getattr(error, "cause", None)
    return f"{type(cause).__name__}: {cause}".splitlines()[0] if cause is not None else _first_line(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
