"""Where the original study's statistics files are: their names, a folder's tree, the hub dataset.

The original script writes ``grads_exp/<task>/<model>/grads_<stem>.jsonl``; the task folder and the
file's stem name a study condition, the model folder a registry model. A source is a folder walked
for that tree, one file, or a dataset on the Hugging Face hub (only the files asked for are
downloaded). No torch here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from analysis import data, registry
from analysis.errors import StudyError

HUB_PREFIX = "hf://datasets/"
HUB_DATASET = "MingLiiii/Layer_Gradient"
_FILE = re.compile(r"^grads_(.+)\.jsonl$")


class OriginalFormatError(StudyError, ValueError):
    """A file or a request that the importer cannot map to the study."""


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


def folder_for(model: str) -> str:
    """The original folder name of a registry model (or the name itself when it has none)."""
    info = registry.known_model(model)
    return info.original_folder if info is not None and info.original_folder else model


@dataclass(frozen=True)
class OriginalFile:
    """One statistics file, with the model and condition its place in the tree names."""

    path: Path
    relative: str  # as the source names it (under its root, or in the hub dataset)
    model: str | None
    condition: str | None
    problem: str | None = None  # why the file cannot be imported (unknown folder or file name)


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
        known = ", ".join(info.original_folder for info in registry.PAPER_MODELS.values())
        return None, condition, f"unknown model folder {folder!r} (known: {known})"
    return model, condition, None


def find_files(root: Path) -> list[OriginalFile]:
    """Every ``grads_*.jsonl`` under ``root``, in path order, with its model and condition."""
    found = []
    for path in sorted(Path(root).rglob("grads_*.jsonl")):
        relative = path.relative_to(root).as_posix()
        model, condition, problem = describe_place(relative)
        found.append(OriginalFile(path, relative, model, condition, problem))
    return found


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
        raise OriginalFormatError(f"{source}: expected hf://datasets/<owner>/<name>, e.g. {HUB_PREFIX}{HUB_DATASET}")
    return repo


def hub_files(
    repo: str,
    models: set[str] | None,
    conditions: set[str] | None,
    cache_dir=None,
    revision: str | None = None,
) -> Iterator[OriginalFile]:
    """The dataset's statistics files that were asked for, each downloaded when its turn comes.

    Only the listing and the chosen files are fetched (huggingface_hub keeps them in its cache, so
    an interrupted import downloads nothing twice).
    """
    from huggingface_hub import HfApi, hf_hub_download

    try:
        names = HfApi().list_repo_files(repo, repo_type="dataset", revision=revision)
    except Exception as error:  # noqa: BLE001 - the hub client's errors (network, missing repo) in one line
        raise OriginalFormatError(f"{HUB_PREFIX}{repo}: cannot list the dataset's files ({error})") from None
    for name in sorted(n for n in names if n.endswith(".jsonl")):
        model, condition, problem = describe_place(name)
        placed = OriginalFile(Path(name), name, model, condition, problem)
        if problem is None and not wanted(placed, models, conditions):
            continue
        if problem is not None:
            yield placed
            continue
        try:
            local = hf_hub_download(repo, name, repo_type="dataset", revision=revision, cache_dir=cache_dir)
        except Exception as error:  # noqa: BLE001
            raise OriginalFormatError(f"{HUB_PREFIX}{repo}/{name}: cannot download ({error})") from None
        yield OriginalFile(Path(local), f"{HUB_PREFIX}{repo}/{name}", model, condition)


# --------------------------------------------------------------------------- a source


def source_files(
    source: str,
    model: str | None = None,
    condition: str | None = None,
    models: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    cache_dir=None,
) -> Iterator[OriginalFile]:
    """The files of a source: a folder walked for the tree, one .jsonl file, or a hub dataset."""
    model_set = {model_for(m) for m in models} if models else None
    unknown = sorted((model_set or set()) - set(registry.PAPER_MODELS))
    if unknown:
        known = ", ".join(info.original_folder for info in registry.PAPER_MODELS.values())
        raise OriginalFormatError(
            f"--models: unknown model {unknown[0]!r} (original folders: {known}, or registry ids)"
        )
    condition_set = set(conditions) if conditions else None
    for key in condition_set or ():
        data.get_condition(key)
    repo = hub_dataset(source)
    if repo is not None:
        yield from hub_files(repo, model_set, condition_set, cache_dir)
        return
    path = Path(source)
    if path.is_file():
        if not model or not condition:
            raise OriginalFormatError(f"{path}: one file needs --model and --condition (e.g. aqua/none/correct)")
        key = data.get_condition(condition).key
        yield OriginalFile(path, str(path), model_for(model), key)
        return
    if not path.is_dir():
        raise OriginalFormatError(f"{source}: no such file or folder (nor hf://datasets/<owner>/<name>)")
    files = find_files(path)
    if not files:
        raise OriginalFormatError(f"{path}: no grads_*.jsonl file anywhere below this folder")
    for file in files:
        if file.problem is not None or wanted(file, model_set, condition_set):
            yield file
