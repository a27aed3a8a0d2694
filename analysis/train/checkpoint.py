"""Checkpoints of a fine-tuning run: model weights, optimiser state, random state and step.

A checkpoint is a folder ``checkpoint-<step>`` holding ``model.safetensors`` (every weight),
``optimizer.safetensors`` and ``optimizer.json`` (AdamW's state: its tensors, and its
hyperparameters and scalars; nothing is unpickled), ``rng.safetensors``
(the CPU and CUDA random states) and ``state.json`` (the step and what the run was). It is written
under a hidden name and renamed into place, so a folder without a dot is complete; the previous
checkpoint is removed only after the new one is in place. ``initial.safetensors`` keeps the
attention projections of step 0, against which the weight change is measured.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, load_model, save_file, save_model

from analysis.core.errors import StudyError

INITIAL = "initial.safetensors"
PREFIX = "checkpoint-"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint on disk."""

    folder: Path
    step: int


def latest(run_dir: Path) -> Checkpoint | None:
    """The run's checkpoint of the highest step (None when it has none)."""
    found = []
    for folder in run_dir.glob(f"{PREFIX}*") if run_dir.is_dir() else []:
        suffix = folder.name[len(PREFIX) :]
        if folder.is_dir() and suffix.isdigit() and (folder / "state.json").is_file():
            found.append(Checkpoint(folder, int(suffix)))
    return max(found, key=lambda c: c.step, default=None)


def rng_state() -> dict[str, torch.Tensor]:
    """The CPU random state and, where CUDA is in use, every device's."""
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for index, value in enumerate(torch.cuda.get_rng_state_all()):
            state[f"cuda{index}"] = value
    return state


def set_rng_state(state: dict[str, torch.Tensor]) -> None:
    """Restore what :func:`rng_state` saved."""
    torch.set_rng_state(state["cpu"])
    cuda = [state[key] for key in sorted(k for k in state if k.startswith("cuda"))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def save_optimizer(optimizer: torch.optim.Optimizer, folder: Path) -> None:
    """The optimiser's state as safetensors (its tensors, named ``<parameter index>.<key>``) and JSON
    (its parameter groups and any value that is not a tensor)."""
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for index, values in state["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{index}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{index}.{key}"] = value
    save_file(tensors, str(folder / "optimizer.safetensors"))
    (folder / "optimizer.json").write_text(json.dumps({"param_groups": state["param_groups"], "scalars": scalars}))


def load_optimizer(optimizer: torch.optim.Optimizer, folder: Path) -> None:
    """Restore what :func:`save_optimizer` wrote (``load_state_dict`` moves each value to its
    parameter's device)."""
    about = json.loads((folder / "optimizer.json").read_text())
    state: dict[int, dict] = {}
    for name, value in [*load_file(str(folder / "optimizer.safetensors")).items(), *about["scalars"].items()]:
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": about["param_groups"]})


def save(
    run_dir: Path, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, about: dict
) -> Checkpoint:
    """Write the checkpoint of ``step`` atomically, then remove the older ones."""
    run_dir.mkdir(parents=True, exist_ok=True)
    staging = run_dir / f".{PREFIX}{step:06d}.{uuid.uuid4().hex[:8]}.tmp"
    staging.mkdir()
    save_model(model, str(staging / "model.safetensors"))
    save_optimizer(optimizer, staging)
    save_file(rng_state(), str(staging / "rng.safetensors"))
    (staging / "state.json").write_text(json.dumps({"step": step, **about}, indent=1))
    final = run_dir / f"{PREFIX}{step:06d}"
    if final.exists():  # the same step written again after a resume: the same numbers
        shutil.rmtree(final)
    os.replace(staging, final)
    for older in run_dir.glob(f"{PREFIX}*"):
        if older != final:
            shutil.rmtree(older, ignore_errors=True)
    for leftover in run_dir.glob(f".{PREFIX}*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)
    return Checkpoint(final, step)


def restore(checkpoint: Checkpoint, model: torch.nn.Module, optimizer: torch.optim.Optimizer, about: dict) -> None:
    """Load a checkpoint into the model and the optimiser and restore the random state.

    ``about`` must equal what the run recorded when it saved (model, condition, settings): a
    checkpoint of another run is refused, not continued.
    """
    state = json.loads((checkpoint.folder / "state.json").read_text())
    recorded = {key: value for key, value in state.items() if key != "step"}
    if recorded != json.loads(json.dumps(about)):
        changed = sorted(
            k for k in set(recorded) | set(about) if recorded.get(k) != json.loads(json.dumps(about)).get(k)
        )
        raise StudyError(
            f"{checkpoint.folder}: the checkpoint was saved by a run with other {', '.join(changed)}; "
            "remove its run folder to start again, or run with the settings it was made with"
        )
    missing, unexpected = load_model(model, str(checkpoint.folder / "model.safetensors"))
    if missing or unexpected:
        raise StudyError(f"{checkpoint.folder}: weights do not fit the model ({(missing or unexpected)[:3]})")
    load_optimizer(optimizer, checkpoint.folder)
    set_rng_state(load_file(str(checkpoint.folder / "rng.safetensors")))


def save_initial(run_dir: Path, weights: dict[str, torch.Tensor]) -> None:
    """Keep step 0's projection weights (written once, atomically)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    temporary = run_dir / f".{INITIAL}.{uuid.uuid4().hex[:8]}.tmp"
    save_file({name: value.detach().cpu().contiguous() for name, value in weights.items()}, str(temporary))
    os.replace(temporary, run_dir / INITIAL)


def load_initial(run_dir: Path) -> dict[str, torch.Tensor] | None:
    """Step 0's projection weights, or None before the run has saved them."""
    path = run_dir / INITIAL
    return load_file(str(path)) if path.is_file() else None
