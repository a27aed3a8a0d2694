"""The run log: what each pipeline run did, in ``run_log.json`` beside the results store.

One ``RunRecord`` per run of ``python -m analysis run``: the profile, the environment, the data
files' sha256 status, the models' facts (revision, attention, chat template hash), seconds per
(model, condition), the notebooks and the book, and the phase times. It measures a run whole: the
machine (CPU model, cores, memory), the commit, the command, the install's time (``make setup``
writes it into the environment), whether the run resumed a store, and the peak resident memory of
the run and its child processes. The pipeline writes it; the reproducibility page and the measured
runs (``analysis.study.measured``) read it, both through this module.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from analysis.store.store_errors import StoreError

RUN_LOG = "run_log.json"
RECORDED_PACKAGES = (
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "matplotlib",
    "seaborn",
    "gguf",
    "safetensors",
    "papermill",
    "jupytext",
    "jupyter-book",
    "layer-gradient-study",
)


@dataclass
class RunRecord:
    """One pipeline run."""

    id: str
    started: str  # ISO time, UTC
    profile: dict = field(default_factory=dict)
    executor: str = "local"
    python: str = ""
    platform: str = ""
    cpu_count: int | None = None
    threads: dict = field(
        default_factory=dict
    )  # torch threads of the extraction: {threads, source, cpus, load_1min, busy_sampled}
    packages: dict = field(default_factory=dict)  # package -> version
    data: list = field(default_factory=list)  # {condition, file, sha256, sha256_ok}
    model_loads: dict = field(default_factory=dict)  # model -> seconds
    models: dict = field(default_factory=dict)  # model -> {revision, attention, chat_template_sha256, transformers}
    extraction: list = field(default_factory=list)  # {model, condition, requested, already_done, computed, ...}
    imports: list = field(
        default_factory=list
    )  # {file, sha256, model, condition, imported, ...}: statistics read, not computed
    notebooks: list = field(default_factory=list)  # {notebook, seconds, output}
    extraction_seconds: float | None = None
    notebooks_seconds: float | None = None
    book: dict = field(default_factory=dict)  # {seconds, index}
    wall_seconds: float | None = None
    finished: str | None = None  # ISO time, UTC; None while the run goes on (or if it died)
    failed: str | None = None  # the error that ended the run, if one did
    command: str = ""  # what was typed: $STUDY_COMMAND (set by make) or the command line
    machine: dict = field(default_factory=dict)  # {cpu_model, cores, usable_cores, memory_bytes}
    commit: dict = field(default_factory=dict)  # {sha, dirty}: the checkout the run came from, {} outside git
    install: dict = field(default_factory=dict)  # {seconds, finished}: the environment's last `make setup`
    peak_rss_bytes: int | None = None  # the run's and its child processes' peak resident memory, at its end

    @classmethod
    def start(cls, profile: dict, executor: str, packages: dict, data: list) -> RunRecord:
        """A new record stamped with the start time and this machine."""
        now = datetime.now(timezone.utc)
        return cls(
            id=now.strftime("%Y%m%dT%H%M%S.%fZ"),
            started=now.isoformat(),
            profile=profile,
            executor=executor,
            python=sys.version.split()[0],
            platform=platform.platform(),
            cpu_count=os.cpu_count(),
            packages=packages,
            data=data,
            command=os.environ.get(COMMAND_VARIABLE) or " ".join(["python", "-m", "analysis", *sys.argv[1:]]),
            machine=machine_facts(),
            commit=commit_facts(),
            install=install_facts(),
        )

    @classmethod
    def from_dict(cls, payload: dict) -> RunRecord:
        """A record from its JSON form; keys this version does not know are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in payload.items() if k in known})

    def finish(self) -> None:
        self.finished = datetime.now(timezone.utc).isoformat()
        self.peak_rss_bytes = peak_rss_bytes()

    @property
    def resumed(self) -> bool:
        """Whether the run found samples already in its store (it continued an earlier run)."""
        return any((r.get("already_done") or 0) > 0 for r in self.extraction)

    def elapsed(self) -> float:
        """Wall seconds: recorded when the run finished, else from its start until now."""
        if self.finished and self.wall_seconds is not None:
            return self.wall_seconds
        started = datetime.fromisoformat(self.started)
        return (datetime.now(timezone.utc) - started).total_seconds()


def read(results_dir) -> list[RunRecord]:
    """Every recorded run of a results directory, oldest first ([] when there is no log)."""
    path = Path(results_dir) / RUN_LOG
    if not path.is_file():
        return []
    try:
        payload = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise StoreError(f"{path}: unreadable run log ({error.msg} at line {error.lineno})") from None
    return [RunRecord.from_dict(run) for run in payload.get("runs", [])]


def latest(results_dir) -> RunRecord | None:
    """The last recorded run, or None."""
    runs = read(results_dir)
    return runs[-1] if runs else None


def save(results_dir, record: RunRecord) -> None:
    """Write ``record`` into the results directory's log, replacing its earlier version."""
    path = Path(results_dir) / RUN_LOG
    runs = [asdict(r) for r in read(results_dir) if r.id != record.id] + [asdict(record)]
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as handle:
        handle.write(json.dumps({"runs": runs}, indent=1, default=str))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


COMMAND_VARIABLE = "STUDY_COMMAND"  # the Makefile's targets say which command the user typed
INSTALL_FILE = ".installed"  # written by `make setup` into the environment: the install's seconds


def machine_facts() -> dict:
    """The machine a run measures: CPU model, cores (all and usable by this process), memory."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    return {
        "cpu_model": model or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_bytes": memory,
    }


def commit_facts(root: Path | None = None) -> dict:
    """The commit of the checkout holding this package, and whether its tracked files differ from it
    ({} outside a git checkout or without git)."""
    root = root or Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise OSError(done.stderr.strip())
        return done.stdout.strip()

    try:
        return {"sha": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return {}


def install_facts(prefix: Path | None = None) -> dict:
    """The seconds of the environment's last ``make setup`` and when it finished, from the file the
    Makefile writes into the environment ({} where it did not: an environment made otherwise)."""
    path = Path(prefix or sys.prefix) / INSTALL_FILE
    try:
        seconds = float(path.read_text().strip())
    except (OSError, ValueError):
        return {}
    finished = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat()
    return {"seconds": seconds, "finished": finished}


def peak_rss_bytes() -> int:
    """The peak resident memory of this process and of the largest child process it waited for
    (the notebooks' kernels, the book's build): the run's peak, as ``/usr/bin/time`` reports it."""
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, kilobytes on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) * scale


def package_versions(names: Sequence[str] = RECORDED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape the results ("not installed" if absent)."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@dataclass
class RunLog:
    """The record of the run in progress, saved to the results directory's run log after every step."""

    results_dir: Path
    record: RunRecord

    @classmethod
    def start(cls, results_dir, profile: dict, executor: str, data_status: list[dict]) -> RunLog:
        """A new run record with the profile, the environment and the data files' sha256 status."""
        return cls(Path(results_dir), RunRecord.start(profile, executor, package_versions(), data_status))

    def save(self) -> None:
        save(self.results_dir, self.record)

    @contextmanager
    def changing(self) -> Iterator[RunRecord]:
        """The record to change, saved when the block ends (also when it raises): every change of a
        run's record goes through here, so the log on disk is never behind by more than one step."""
        try:
            yield self.record
        finally:
            self.save()

    def add_notebook(self, record: dict) -> None:
        """Record one executed notebook."""
        with self.changing() as run:
            run.notebooks.append(record)

    def add_import(self, record: dict) -> None:
        """Record one imported file of statistics."""
        with self.changing() as run:
            run.imports.append(record)


# The packages that shape an import of the original study's statistics (no model weights; the
# tokenizers count each sample's response tokens).
IMPORT_PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "huggingface-hub",
    "transformers",
    "tokenizers",
    "layer-gradient-study",
)


@contextmanager
def recording(
    results_dir,
    profile: dict,
    *,
    executor: str = "local",
    data_status: Sequence[dict] = (),
    packages: Sequence[str] = RECORDED_PACKAGES,
) -> Iterator[RunLog]:
    """The log of one run (of the pipeline or of a command): saved at its start with the profile, the
    executor, the packages' versions and the data files' status, changed through ``RunLog.changing``,
    and finished with its wall time at its end, whether the run succeeds or fails."""
    log = RunLog(Path(results_dir), RunRecord.start(profile, executor, package_versions(packages), list(data_status)))
    log.save()
    try:
        yield log
    except BaseException as error:
        with log.changing() as record:
            record.failed = f"{type(error).__name__}: {error}"[:500]
        raise
    finally:
        with log.changing() as record:
            record.wall_seconds = record.elapsed()
            record.finish()
