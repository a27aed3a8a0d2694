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
from dataclasses import dataclass

import pandas as pd
from tqdm.auto import tqdm

from analysis.core import registry
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.data import data_files, sample_draws
from analysis.extract import preparation, runner
from analysis.extract.distributed.summary import ExtractionReport, ShardFailure, index_ranges  # noqa: F401
from analysis.extract.distributed.work import (  # noqa: F401
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
from analysis.store import ResultsStore, RunKey

INSTALL_HINT = "pip install '.[distributed]' (or: pip install 'ray[default]')"


def require_ray():
    """The ``ray`` module, or a StudyError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise StudyError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


@dataclass(frozen=True)
class RayOptions:
    """How ``run_extraction`` reaches Ray and runs the work (its keyword arguments).

    ``address`` "auto" or "HOST:PORT" joins a running cluster; None joins the one ``$RAY_ADDRESS``
    names, if set, else starts a Ray instance on this machine for the run (``num_cpus``, default
    all; ``object_store_memory`` in bytes). If Ray is already initialised in this process, that
    instance is used as it is. ``data_dir``: as for ``runner.extract``. A shard whose worker process
    dies is run again up to ``max_retries`` times; ``max_workers`` overrides the number of actors.
    With ``progress`` a bar is shown and the report's summary printed at the end.
    """

    address: str | None = None
    data_dir: str | os.PathLike | None = None
    max_workers: int | None = None
    max_retries: int = 2
    trust_remote_code: bool = False
    num_cpus: int | None = None
    object_store_memory: int | None = None
    progress: bool = True


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
) -> ExtractionReport:
    """Extract every job's condition into ``results_dir`` on a Ray cluster, storing what ``runner.extract`` stores.

    ``jobs`` are (model, template or None, condition key or JSON path); ``settings`` and ``data_dir``
    mean what they mean for ``runner.extract``, and samples are batched exactly as there. About
    ``settings.shard_size`` samples (whole batches) make one unit of work and one stored part.
    ``settings.device``: auto (one actor per GPU where the cluster has GPUs), cpu or cuda;
    ``settings.threads``: CPUs per actor. The keyword arguments are described at :class:`RayOptions`.
    Raises StudyError (Ray missing or unreachable), DataError, ModelError or StoreError
    (StoreError: another run holds one of these conditions) before computing anything; what fails
    on a worker (a model that does not load, a worker that keeps dying) is listed in the report's
    failures, not raised, and the rest of the run goes on.
    """
    chosen = RayOptions(
        address=address,
        data_dir=data_dir,
        max_workers=max_workers,
        max_retries=max_retries,
        trust_remote_code=trust_remote_code,
        num_cpus=num_cpus,
        object_store_memory=object_store_memory,
        progress=progress,
    )
    settings = settings or ExtractionSettings()
    if settings.keep_spectra:
        raise StudyError("keeping the singular values is not available with Ray; use the local executor")
    ray = require_ray()
    started = time.perf_counter()
    store = ResultsStore(results_dir)
    normalised = [job if isinstance(job, Job) else Job(*job) for job in jobs]
    templates = [registry.resolve_template(job.model, job.template) for job in normalised]
    report = ExtractionReport()
    with ExitStack() as locks:
        for key in _plans(normalised, templates, store, settings, data_dir=chosen.data_dir):
            locks.enter_context(store.lock(key))
        # planned again under the locks: the store may have grown
        tasks, summaries = _tasks(
            _plans(normalised, templates, store, settings, data_dir=chosen.data_dir), store, settings
        )
        report.conditions = list(summaries.values())
        if tasks:
            _run_on_ray(ray, Dispatch(tasks, settings, chosen, store, summaries, report))
    report.seconds = time.perf_counter() - started
    if chosen.progress:
        print(report.describe())
    return report


def _plans(
    jobs: list[Job], templates: list[str], store: ResultsStore, settings: ExtractionSettings, *, data_dir
) -> dict[RunKey, tuple[Job, str, runner.RunPlan]]:
    """Each job's plan from the store, one per run key."""
    planned: dict[RunKey, tuple[Job, str, runner.RunPlan]] = {}
    for job, template in zip(jobs, templates):
        plan = runner.plan_run(job.model, template, job.spec, store, settings=settings, data_dir=data_dir)
        planned.setdefault(plan.key, (job, template, plan))
    return planned


def _tasks(
    planned: dict[RunKey, tuple[Job, str, runner.RunPlan]], store: ResultsStore, settings: ExtractionSettings
) -> tuple[list[Task], dict[RunKey, runner.ConditionSummary]]:
    """The first task of every run with samples to compute, and every run's summary; each run's draw kept."""
    tasks: list[Task] = []
    summaries: dict[RunKey, runner.ConditionSummary] = {}
    runs = {key: planned_run(plan, job.model, template, job.spec) for key, (job, template, plan) in planned.items()}
    for key, (job, _, plan) in planned.items():
        runner.check_same_data(store, plan)
        sample_draws.record(store.root, plan.identity["condition"], settings.n_samples, plan.drawn)
        summaries[key] = runner.ConditionSummary(
            job.model,
            plan.identity["condition"],
            plan.requested,
            plan.requested - len(plan.todo),
            sha256_ok=plan.resolved.sha256_ok,
        )
    for keys in _shared(planned):
        plans = [planned[key][2] for key in keys]
        for plan, indices, matched in runner.pass_parts(plans):
            rider = None if matched is None else runs[matched.key]
            tasks.append(Task("batches", runs[plan.key], tuple(indices), rider))
    return tasks, summaries


def _shared(planned: dict[RunKey, tuple[Job, str, runner.RunPlan]]) -> list[tuple[RunKey, ...]]:
    """The planned runs one forward pass per sample serves (``runner.shared_passes``): a loss-matched
    condition's run with its reference's of the same model, template and truncation, any other alone."""
    by_model: dict[tuple, list[str]] = {}
    for key, (_, _, plan) in planned.items():
        by_model.setdefault((key.model_slug, key.template, key.max_length), []).append(plan.identity["condition"])
    keys = {
        ((k.model_slug, k.template, k.max_length), plan.identity["condition"]): k for k, (_, _, plan) in planned.items()
    }
    groups: list[tuple[RunKey, ...]] = []
    for model, conditions in by_model.items():
        for specs in runner.shared_passes(conditions):
            groups.append(tuple(keys[(model, spec)] for spec in specs))
    return groups


@dataclass(frozen=True)
class Dispatch:
    """The work of one run and where its results go."""

    tasks: list[Task]
    settings: ExtractionSettings
    options: RayOptions
    store: ResultsStore
    summaries: dict[RunKey, runner.ConditionSummary]
    report: ExtractionReport


def _run_on_ray(ray, work: Dispatch) -> None:
    """Ray joined or started, the actors sized to the cluster, the tasks dispatched; Ray shut down if started here."""
    options, settings = work.options, work.settings
    started_ray = _connect(ray, options.address, options.num_cpus, options.object_store_memory)
    try:
        device = "cuda" if settings.device.startswith("cuda") else settings.device  # Ray picks the GPU
        layout = worker_layout(ray.nodes(), device, settings.threads)
        count = min(layout.count, options.max_workers or layout.count, sum(len(t.indices) for t in work.tasks))
        work.report.layout = WorkerLayout(count, layout.num_cpus, layout.num_gpus).describe()
        worker = WorkerSettings(
            settings.but(
                device=layout.device, batch_size=preparation.batch_size_for(layout.device, settings.batch_size)
            ),
            str(data_files.data_dir(options.data_dir).resolve()),
            options.trust_remote_code,
        )
        _Dispatcher(ray, work, WorkerLayout(count, layout.num_cpus, layout.num_gpus), worker).run()
    finally:
        if started_ray:
            ray.shutdown()


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
            raise StudyError(
                f"the Ray cluster at {address} asks for a token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                "(or the file ~/.ray/auth_token) as on the cluster"
            ) from None
        where = "start a local Ray instance" if address is None else f"join the Ray cluster at {address}"
        raise StudyError(f"cannot {where}: {str(error).strip().splitlines()[0]}") from None
    return True


def _refused_for_token(error: BaseException | None) -> bool:
    """Whether joining failed on the cluster's token authentication (Ray wraps that error in others)."""
    while error is not None:
        if type(error).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


class _Dispatcher:
    """Hands tasks to actors, preferring the model an actor holds; stores each result as it comes.

    Ray restarts an actor whose process died and runs its task again (``max_task_retries``);
    only the driver writes the store.
    """

    def __init__(self, ray, work: Dispatch, layout: WorkerLayout, worker: WorkerSettings):
        self.ray, self.work, self.count = ray, work, layout.count
        actor_class = ray.remote(ShardWorker).options(
            num_cpus=layout.num_cpus,
            num_gpus=layout.num_gpus,
            max_restarts=-1,
            max_task_retries=work.options.max_retries,
        )
        self.actors = [actor_class.remote(worker) for _ in range(self.count)]
        self.holding: list[tuple[str, str] | None] = [None] * self.count
        self.queues: dict[tuple[str, str], deque[Task]] = {}
        for task in work.tasks:
            self.queues.setdefault(task.run.model_key, deque()).append(task)
        self.running: dict = {}  # object ref -> (actor number, task)
        self.bar = tqdm(
            total=sum(len(t.indices) for t in work.tasks),
            unit="sample",
            desc="ray extract",
            disable=not work.options.progress,
        )

    def next_task(self, actor: int) -> Task | None:
        """A task of the model this actor holds, else of the model with most work per actor holding it."""
        held = self.holding[actor]
        own = self.queues.get(held) if held is not None else None
        if own:
            return own.popleft()
        waiting = [model for model, queue in self.queues.items() if queue]
        if not waiting:
            return None
        model = max(waiting, key=lambda m: len(self.queues[m]) / (1 + self.holding.count(m)))
        return self.queues[model].popleft()

    def feed(self, actor: int) -> None:
        task = self.next_task(actor)
        if task is not None:
            self.holding[actor] = task.run.model_key
            self.running[self.actors[actor].run.remote(task)] = (actor, task)

    def fail(self, task: Task, error: str) -> None:
        self.work.report.failures.extend(
            ShardFailure(run.model, run.identity["condition"], task.indices, error) for run in task.runs()
        )

    def run(self) -> None:
        try:
            for actor in range(self.count):
                self.feed(actor)
            while self.running:
                [ref], _ = self.ray.wait(list(self.running), num_returns=1)
                actor, task = self.running.pop(ref)
                self.receive(ref, actor, task)
                self.feed(actor)
                busy = {n for n, _ in self.running.values()}
                for idle in range(self.count):  # new shards may have been queued for actors that had none
                    if idle not in busy:
                        self.feed(idle)
        finally:
            self.bar.close()
            for handle in self.actors:
                self.ray.kill(handle)

    def receive(self, ref, actor: int, task: Task) -> None:
        """A finished task's result taken, or its failure reported (the actor then holds no model)."""
        from ray.exceptions import RayActorError, RayError, RayTaskError, WorkerCrashedError

        try:
            result: TaskResult = self.ray.get(ref)
        except RayTaskError as error:  # the code raised: running it again would raise again
            self.fail(task, _task_error_text(error))
        except (RayActorError, WorkerCrashedError) as error:
            self.fail(task, f"worker died {self.work.options.max_retries + 1} time(s): {_first_line(error)}")
            self.holding[actor] = None
        except RayError as error:
            self.fail(task, _first_line(error))
            self.holding[actor] = None
        else:
            self.take(task, result)
        report = self.work.report
        self.bar.set_postfix_str(
            f"shards {report.shards_stored}/{report.shards}"
            + (f", failed {len(report.failures)}" if report.failures else "")
        )

    def take(self, task: Task, result: TaskResult) -> None:
        """A result stored; a first task's batches queued as shards."""
        report = self.work.report
        _take_result(self.work.store, task, result, summaries=self.work.summaries, report=report)
        if task.kind == "batches":
            shards = [
                Task("compute", task.run, s, task.matched)
                for s in shards_of(result.batches, self.work.settings.shard_size)
            ]
            self.queues[task.run.model_key].extend(shards)
            report.shards += len(shards)
            self.bar.update(len({row["sample_index"] for row in result.skipped}))
        else:
            report.shards_stored += 1
            self.bar.update(len(task.indices))


def _take_result(
    store: ResultsStore,
    task: Task,
    result: TaskResult,
    *,
    summaries: dict[RunKey, runner.ConditionSummary],
    report: ExtractionReport,
) -> None:
    """Store a task's rows and skips of each of its runs as one part, and count them in that
    condition's summary (a shared pass's seconds split evenly between its runs)."""
    runs = task.runs()
    for run in runs:
        condition = run.identity["condition"]
        rows = None if result.rows is None else result.rows[result.rows["condition"] == condition]
        rows = None if rows is None or rows.empty else rows
        skipped = [row for row in result.skipped if row["condition"] == condition]
        if rows is not None or skipped:
            store.write(run.key, rows, pd.DataFrame(skipped) if skipped else None)
        summary = summaries[run.key]
        summary.count(rows, skipped)
        summary.seconds += result.compute_seconds / len(runs) if task.kind == "compute" else 0.0
        if task.matched is not None:
            summary.shared_pass = next(r.identity["condition"] for r in runs if r is not run)
    report.hosts.add(result.host)
    report.restarts += int(result.restarted)
    report.load_seconds[task.run.model] = report.load_seconds.get(task.run.model, 0.0) + result.load_seconds


def _task_error_text(error) -> str:
    cause = getattr(error, "cause", None)
    return f"{type(cause).__name__}: {cause}".splitlines()[0] if cause is not None else _first_line(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
