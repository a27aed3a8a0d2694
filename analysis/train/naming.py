"""How a training run and its checkpoints are named in the results store (no torch: pages read it).

The probe statistics of a checkpoint are ordinary rows of the results store whose ``model`` is
``<model>@train:<dataset>.<arm>.<responses>.seed<seed>:step<step>``; every page that reads the store
reads them as it reads any model, and :func:`parse_probe_model` recovers the run and the step.
A run's own tables (losses, weight change, checkpoints) live under ``runs/<run>/`` of the results
directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.core.errors import StudyError
from analysis.core.registry import model_slug

TRAIN_MARK = "@train:"
RUNS_FOLDER = "runs"
_PROBE_NAME = re.compile(r"^(?P<model>.+)@train:(?P<run>[^:]+):step(?P<step>\d+)$")
_RUN_NAME = re.compile(r"^(?P<dataset>[^.]+)\.(?P<arm>[^.]+)\.(?P<responses>[^.]+)\.seed(?P<seed>\d+)$")


@dataclass(frozen=True)
class TrainingRunId:
    """One fine-tuning run: a model trained on one arm of one dataset under one seed."""

    model: str
    dataset: str
    arm: str
    responses: str
    seed: int

    @property
    def run(self) -> str:
        """The run's name, unique for a model: ``<dataset>.<arm>.<responses>.seed<seed>``."""
        return f"{self.dataset}.{self.arm}.{self.responses}.seed{self.seed}"

    @property
    def condition(self) -> str:
        """The study condition trained on, e.g. ``aqua/detailed/correct``."""
        return f"{self.dataset}/{self.arm}/{self.responses}"

    def probe_model(self, step: int) -> str:
        """The ``model`` of this run's probe rows at ``step``."""
        return f"{self.model}{TRAIN_MARK}{self.run}:step{step}"

    def folder(self) -> str:
        """The run's folder below ``runs/``: the model's slug and the run's name."""
        return f"{model_slug(self.model)}/{self.run}"


def parse_probe_model(name: str) -> dict:
    """``{"base_model", "run", "step", "dataset", "arm", "responses", "seed"}`` of a probe row's model."""
    match = _PROBE_NAME.match(name)
    if not match:
        raise StudyError(f"model {name!r} is not a training checkpoint (<model>@train:<run>:step<k>)")
    run = _RUN_NAME.match(match["run"])
    if not run:
        raise StudyError(f"model {name!r}: run {match['run']!r} is not <dataset>.<arm>.<responses>.seed<k>")
    return {
        "base_model": match["model"],
        "run": match["run"],
        "step": int(match["step"]),
        "dataset": run["dataset"],
        "arm": run["arm"],
        "responses": run["responses"],
        "seed": int(run["seed"]),
    }


def is_probe_model(name: str) -> bool:
    """Whether a stored model name is a training checkpoint's."""
    return _PROBE_NAME.match(name) is not None
