"""Where the original study's statistics files are: their names, a folder's tree, the hub dataset.

The original script writes ``grads_exp/<task>/<model>/grads_<stem>.jsonl``; the task folder and the
file's stem name a study condition, the model folder a registry model. A source is a folder walked
for that tree, one file, or a dataset on the Hugging Face hub (only the files asked for are
downloaded). No torch here.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO

from analysis import data
from analysis.core import registry
from analysis.core.errors import StudyError
from analysis.data import data_files

ORIGIN = "original study's statistics"
HUB_PREFIX = "hf://datasets/"
HUB_DATASET = "MingLiiii/Layer_Gradient"
_FILE = re.compile(r"^grads_(.+)\.jsonl$")
ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")  # a release laid out as archives of task folders


# --------------------------------------------------------------------------- names


def _task_folders() -> dict[tuple[str, str], str]:
    """(task folder, data file stem) -> condition key, from the study's registry."""
    table = {}
    for condition in data.study_conditions():
        path = PurePosixPath(condition.relative_path)
        table[(path.parent.name, path.stem)] = condition.key
    return table


TASK_FILES = _task_folders()
TASKS = tuple(sorted({task for task, _ in TASK_FILES}))


def condition_for(task: str, stem: str) -> str | None:
    """The study condition of ``grads_<stem>.jsonl`` in the task folder ``task``, else None."""
    return TASK_FILES.get((task, stem))


def original_path(model_folder: str, condition: str) -> str:
    """Where the original script writes a model's statistics of a condition, relative to ``grads_exp``."""
    relative = PurePosixPath(data.get_condition(condition).relative_path)
    return f"{relative.parent}/{model_folder}/grads_{relative.stem}.jsonl"


def model_for(name: str) -> str:
    """The registry name of a model given by its original folder name or registry id; else ``name``."""
    return registry.original_folder_model(name) or name


@dataclass(frozen=True)
class OriginalFile:
    """One statistics file, with the model and condition its place in the tree names.

    A member of an archive is read through ``opener`` (streamed, never unpacked to disk); ``once``:
    a member of a compressed tar stream, whose bytes can be read once, when its turn comes.
    """

    path: Path
    relative: str  # as the source names it (under its root, or in the hub dataset)
    model: str | None
    condition: str | None
    problem: str | None = None  # why the file cannot be imported (unknown folder or file name)
    opener: Callable[[], IO[bytes]] | None = field(default=None, compare=False, repr=False)
    size: int | None = None
    once: bool = False

    def open(self) -> IO[bytes]:
        """The file's bytes, as a binary stream."""
        return self.opener() if self.opener is not None else open(self.path, "rb")

    def byte_size(self) -> int:
        return self.size if self.size is not None else self.path.stat().st_size

    def sha256(self) -> str:
        """sha256 of the file's bytes, read in chunks (the files are large)."""
        with self.open() as handle:
            return data_files.stream_sha256(handle)


class HashingLines:
    """The lines of a binary stream, hashed (sha256) as they are read: a streamed member is read once."""

    def __init__(self, stream: Iterable[bytes]):
        self.stream, self.digest = stream, hashlib.sha256()

    def __iter__(self) -> Iterator[bytes]:
        for line in self.stream:
            self.digest.update(line)
            yield line

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def describe_place(relative: str) -> tuple[str | None, str | None, str | None]:
    """(model, condition, problem) of a path ending in ``<task>/<model>/grads_<stem>.jsonl``."""
    parts = PurePosixPath(relative).parts
    match = _FILE.match(parts[-1])
    if match is None or len(parts) < 3:
        return None, None, "not a statistics file (expected <task>/<model>/grads_<data file stem>.jsonl)"
    task, folder, stem = parts[-3], parts[-2], match.group(1)
    condition = condition_for(task, stem)
    model = registry.original_folder_model(folder)
    if condition is None:
        known = ", ".join(TASKS)
        return model, None, f"unknown task folder or data file {task}/{stem} (tasks: {known})"
    if model is None:
        known = _known_folders()
        return None, condition, f"unknown model folder {folder!r} (known: {known})"
    return model, condition, None


def _known_folders() -> str:
    """The original study's model folders, as an error message lists them."""
    return ", ".join(info.original_folder for info in registry.PAPER_MODELS.values() if info.original_folder)


def find_files(root: Path) -> list[OriginalFile]:
    """Every ``grads_*.jsonl`` under ``root``, in path order, with its model and condition."""
    found = []
    for path in sorted(Path(root).rglob("grads_*.jsonl")):
        relative = path.relative_to(root).as_posix()
        model, condition, problem = describe_place(relative)
        found.append(OriginalFile(path, relative, model, condition, problem))
    return found


def find_archives(root: Path) -> list[Path]:
    """Every archive (.tar.gz, .tgz, .tar, .zip) under ``root``, in path order."""
    return sorted(p for p in Path(root).rglob("*") if p.is_file() and is_archive(p.name))


def is_archive(name: str) -> bool:
    return name.endswith(ARCHIVES)


def archive_members(
    archive: Path, label: str, models: set[str] | None, conditions: set[str] | None
) -> Iterator[OriginalFile]:
    """The statistics files inside an archive that were asked for, each streamed when its turn comes.

    A .zip member is opened in place; a tar is read as a stream, member after member, so only the
    member being imported is in memory, one line at a time, and nothing is unpacked to disk.
    """
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as handle:
            for info in sorted(handle.infolist(), key=lambda i: i.filename):
                if not info.is_dir() and _FILE.match(PurePosixPath(info.filename).name):
                    opener = partial(handle.open, info)
                    file = _member(label, info.filename, opener, info.file_size, once=False)
                    if file.problem is not None or wanted(file, models, conditions):
                        yield file
        return
    with tarfile.open(archive, mode="r|*") as stream:
        for member in stream:
            if member.isfile() and _FILE.match(PurePosixPath(member.name).name):
                file = _member(label, member.name, partial(_extracted, stream, member), member.size, once=True)
                if file.problem is not None or wanted(file, models, conditions):
                    yield file


def _extracted(stream: tarfile.TarFile, member: tarfile.TarInfo) -> IO[bytes]:
    handle = stream.extractfile(member)
    if handle is None:  # pragma: no cover - a regular file member always has a reader
        raise StudyError(f"{member.name}: cannot be read from the archive")
    return handle


def _member(label: str, name: str, opener, size: int, *, once: bool) -> OriginalFile:
    model, condition, problem = describe_place(name)
    return OriginalFile(Path(name), f"{label}/{name}", model, condition, problem, opener, size, once)


def wanted(file: OriginalFile, models: set[str] | None, conditions: set[str] | None) -> bool:
    """Whether a file is among the models and conditions asked for (None: all)."""
    if models is not None and file.model not in models:
        return False
    return conditions is None or file.condition in conditions


# --------------------------------------------------------------------------- the hub


def hub_dataset(source: str) -> str | None:
    """The dataset id of ``hf://datasets/<owner>/<name>``, else None."""
    if not source.startswith(HUB_PREFIX):
        return None
    repo = source[len(HUB_PREFIX) :].strip("/")
    if repo.count("/") != 1:
        raise StudyError(f"{source}: expected hf://datasets/<owner>/<name>, e.g. {HUB_PREFIX}{HUB_DATASET}")
    return repo


def hub_files(
    repo: str,
    models: set[str] | None,
    conditions: set[str] | None,
    *,
    cache_dir=None,
    revision: str | None = None,
) -> Iterator[OriginalFile]:
    """The dataset's statistics files that were asked for, each downloaded when its turn comes.

    Only the listing and the chosen files are fetched (huggingface_hub keeps them in its cache, so
    an interrupted import downloads nothing twice). A release laid out as archives (.tar.gz, .zip
    of task folders) is downloaded archive by archive, skipping archives named after a task folder
    that holds none of the conditions asked for, and its members are streamed.
    """
    from huggingface_hub import HfApi

    try:
        names = HfApi().list_repo_files(repo, repo_type="dataset", revision=revision)
    except Exception as error:  # noqa: BLE001 - the hub client's errors (network, missing repo) in one line
        raise StudyError(f"{HUB_PREFIX}{repo}: cannot list the dataset's files ({error})") from None
    for name in sorted(n for n in names if n.endswith(".jsonl")):
        model, condition, problem = describe_place(name)
        placed = OriginalFile(Path(name), name, model, condition, problem)
        if problem is None and not wanted(placed, models, conditions):
            continue
        if problem is not None:
            yield placed
            continue
        local = _download(repo, name, revision, cache_dir)
        yield OriginalFile(Path(local), f"{HUB_PREFIX}{repo}/{name}", model, condition)
    tasks = (
        None
        if conditions is None
        else {PurePosixPath(data.get_condition(c).relative_path).parent.name for c in conditions}
    )
    for name in sorted(n for n in names if is_archive(n)):
        stem = PurePosixPath(name).name.split(".")[0]
        if tasks is not None and stem in TASKS and stem not in tasks:
            continue
        local = _download(repo, name, revision, cache_dir)
        yield from archive_members(Path(local), f"{HUB_PREFIX}{repo}/{name}", models, conditions)


def _download(repo: str, name: str, revision: str | None, cache_dir) -> str:
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(repo, name, repo_type="dataset", revision=revision, cache_dir=cache_dir)
    except Exception as error:  # noqa: BLE001
        raise StudyError(f"{HUB_PREFIX}{repo}/{name}: cannot download ({error})") from None


# --------------------------------------------------------------------------- a source


def source_files(
    source: str,
    *,
    model: str | None = None,
    condition: str | None = None,
    models: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    cache_dir=None,
) -> Iterator[OriginalFile]:
    """The files of a source: a folder walked for the tree, one .jsonl file, or a hub dataset."""
    model_set, condition_set = _chosen(models, conditions)
    repo = hub_dataset(source)
    if repo is not None:
        yield from hub_files(repo, model_set, condition_set, cache_dir=cache_dir)
        return
    path = Path(source)
    if path.is_file() and is_archive(path.name):
        yield from archive_members(path, str(path), model_set, condition_set)
        return
    if path.is_file():
        if not model or not condition:
            raise StudyError(f"{path}: one file needs --model and --condition (e.g. aqua/none/correct)")
        key = data.get_condition(condition).key
        yield OriginalFile(path, str(path), model_for(model), key)
        return
    if not path.is_dir():
        raise StudyError(f"{source}: no such file or folder (nor hf://datasets/<owner>/<name>)")
    yield from _folder_files(path, model_set, condition_set)


def _chosen(models: Iterable[str] | None, conditions: Iterable[str] | None) -> tuple[set | None, set | None]:
    """The models (registry ids) and conditions asked for (None: all), each checked to exist."""
    model_set = {model_for(m) for m in models} if models else None
    unknown = sorted((model_set or set()) - set(registry.PAPER_MODELS))
    if unknown:
        known = _known_folders()
        raise StudyError(f"--models: unknown model {unknown[0]!r} (original folders: {known}, or registry ids)")
    condition_set = set(conditions) if conditions else None
    for key in condition_set or ():
        data.get_condition(key)
    return model_set, condition_set


def _folder_files(path: Path, model_set: set | None, condition_set: set | None) -> Iterator[OriginalFile]:
    """A folder's files of the original tree, those of its archives after them."""
    files, archives = find_files(path), find_archives(path)
    if not files and not archives:
        raise StudyError(f"{path}: no grads_*.jsonl file (nor .tar.gz, .tgz, .tar or .zip) below this folder")
    for file in files:
        if file.problem is not None or wanted(file, model_set, condition_set):
            yield file
    for archive in archives:
        yield from archive_members(archive, archive.relative_to(path).as_posix(), model_set, condition_set)


def streamed(source: str) -> bool:
    """Whether a source's files come one at a time (the hub, archives): no size known up front."""
    path = Path(source)
    if hub_dataset(source) is not None or (path.is_file() and is_archive(path.name)):
        return True
    return path.is_dir() and bool(find_archives(path))
