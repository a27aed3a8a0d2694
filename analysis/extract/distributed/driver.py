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

import logging
import os
import time
from collections import deque
from collections.abc import Sequence
from contextlib import ExitStack

import pandas as pd
from tqdm.auto import tqdm

from analysis import data, registry
from analysis.extract import runner
from analysis.extract.distributed.summary import ExtractionReport, ShardFailure, index_ranges  # noqa: F401
from analysis.extract.distributed.work import (  # noqa: F401
    DistributedError,
    Job,
    Run,
    ShardWorker,
    Task,
    TaskResult,
    WorkerLayout,
    WorkerSettings,
    planned_run,
    shards_of,
    worker_layout,
)
from analysis.settings import ExtractionSettings
from analysis.store import ResultsStore, RunKey

INSTALL_HINT = "pip install '.[distributed]' (or: pip install 'ray[default]')"
MAX_CPUS_PER_GPU_WORKER = 4


def require_ray():
    """The ``ray`` module, or a DistributedError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise DistributedError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def run_extraction(
    jobs: Sequence[Job | tuple[str, str | None, str]],
    results_dir: str | os.PathLike,
    settings: ExtractionSettings | None = None,
    *,
    address: str | None = None,
    data_dir: str | os.PathLike | None = None,
    max_workers: int | None = None,
    max_retries: int = 2,
    trust_remote_code: bool = False,
    num_cpus: int | None = None,
    object_store_memory: int | None = None,
    progress: bool = True,
    **changes,
) -> ExtractionReport:
    """Extract every job's condition into ``results_dir`` on a Ray cluster, storing what ``runner.extract`` stores.

    ``jobs`` are (model, template or None, condition key or JSON path). ``address`` "auto" or
    "HOST:PORT" joins a running cluster; None joins the one ``$RAY_ADDRESS`` names, if set, else
    starts a Ray instance on this machine for the run (``num_cpus``, default all;
    ``object_store_memory`` in bytes). If Ray is already initialised in this process, that
    instance is used as it is. ``settings`` (and single ``changes`` to them) and ``data_dir``
    mean what they mean for ``runner.extract``, and samples are batched exactly as there. About
    ``settings.shard_size`` samples (whole batches) make one unit of work and one stored part; a
    shard whose worker process dies is run again up to ``max_retries`` times.
    ``settings.device``: auto (one actor per GPU where the cluster has GPUs), cpu or cuda;
    ``settings.threads`` (CPUs per actor) and ``max_workers`` override the actors' size and number.
    Raises DistributedError (Ray missing or unreachable), DataError, ModelError or StoreError
    (StoreBusy: another run holds one of these conditions) before computing anything; what fails
    on a worker (a model that does not load, a worker that keeps dying) is listed in the report's
    failures, not raised, and the rest of the run goes on. With ``progress`` a bar is shown and
    the report's summary printed at the end.
    """
    settings = (settings or ExtractionSettings()).but(**changes)
    if settings.keep_spectra:
        raise DistributedError("keeping the singular values is not available with Ray; use the local executor")
    ray = require_ray()
    started = time.perf_counter()
    store = ResultsStore(results_dir)
    data_root = str(data.data_dir(data_dir).resolve())
    normalised = [job if isinstance(job, Job) else Job(*job) for job in jobs]
    templates = [registry.resolve_template(job.model, job.template) for job in normalised]

    def plans() -> dict[RunKey, tuple[Job, str, runner.RunPlan]]:
        planned: dict[RunKey, tuple[Job, str, runner.RunPlan]] = {}
        for job, template in zip(normalised, templates):
            plan = runner.plan_run(job.model, template, job.spec, store, settings, data_dir)
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
                device = "cuda" if settings.device.startswith("cuda") else settings.device  # Ray picks the GPU
                layout = worker_layout(ray.nodes(), device, settings.threads)
                count = min(layout.count, max_workers or layout.count, sum(len(t.indices) for t in tasks))
                report.layout = WorkerLayout(count, layout.num_cpus, layout.num_gpus).describe()
                worker = WorkerSettings(
                    settings.but(
                        device=layout.device, batch_size=runner.batch_size_for(layout.device, settings.batch_size)
                    ),
                    data_root,
                    trust_remote_code,
                )
                _dispatch(
                    ray,
                    tasks,
                    layout,
                    count,
                    worker,
                    settings.shard_size,
                    max_retries,
                    store,
                    summaries,
                    report,
                    progress,
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
