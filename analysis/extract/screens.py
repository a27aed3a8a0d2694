"""The loss screens kept beside the results store: which instructions a run screened for G1's
matched pairs, with the two mean token losses of each, and which of them matched.

G1 asks whether the layer curves tell irrelevant from correct responses beyond what the loss
tells; at matched loss that question needs pairs (one instruction, its correct and its irrelevant
Detailed-CoT response) whose two mean token losses lie within ``settings.LOSS_CALIPER`` nats. A run
with a loss screen (``ExtractionSettings.loss_screen``) computes those losses with forward passes
only, over the instructions after its draw in the same seeded order (``analysis.extract.screen``),
then the gradients of the pairs that match. What it screened is kept here, per model and dataset:

    screens/<model slug>/<dataset>.json   {"model", "dataset", "template", "max_length", "caliper",
                                           "target", "budget", "drawn", "drawn_matched",
                                           "screened": [{"index", "correct", "irrelevant", "skipped"}]}

A screened instruction's losses are null where a response was skipped, with the reason. The
matched pairs' gradient rows are stored with the run of the two conditions they belong to; a page
reads them beside the draw, never in it (``analysis.report.load``), so no finding but G1's matched
statistic sees them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from analysis.core.errors import StudyError
from analysis.core.registry import model_slug
from analysis.store import store_files

SCREENS = "screens"
SETTING = "detailed"  # the setting whose pairs G1 decides on, the setting screened
TARGET, BUDGET, EXHAUSTED, NOT_FINISHED = "target reached", "budget spent", "no instruction left", "not finished"


class ScreenError(StudyError, ValueError):
    """A kept screen that cannot be read."""


@dataclass(frozen=True)
class Screened:
    """One screened instruction: its two mean token losses (None where that response was skipped,
    ``skipped`` saying why)."""

    index: int
    correct: float | None
    irrelevant: float | None
    skipped: str | None = None

    def matched(self, caliper: float) -> bool:
        """Whether both losses are known and lie within ``caliper`` nats of each other."""
        if self.correct is None or self.irrelevant is None:
            return False
        return abs(self.irrelevant - self.correct) <= caliper


@dataclass
class Screen:
    """One model's screen of one dataset (see the module docstring): its settings, how many of the
    run's drawn pairs already matched, and the instructions screened so far, in screening order."""

    model: str
    dataset: str
    template: str
    max_length: int
    caliper: float
    target: int  # matched pairs wanted, the drawn ones included
    budget: int  # instructions screened at most
    available: int  # instructions there are to screen (the file's, less the drawn ones)
    drawn: int  # the run's drawn pairs with both losses stored
    drawn_matched: int  # of those, the pairs within the caliper
    screened: list[Screened] = field(default_factory=list)

    @property
    def matched_ids(self) -> list[int]:
        """The screened instructions whose pair matched, in screening order."""
        return [s.index for s in self.screened if s.matched(self.caliper)]

    @property
    def skipped(self) -> int:
        """Screened instructions with a response skipped (their pair cannot match)."""
        return sum(s.skipped is not None for s in self.screened)

    @property
    def done(self) -> bool:
        """Whether the screen has stopped: the target reached, drawn pairs included, or the budget spent."""
        return self.why_stopped() != NOT_FINISHED

    def why_stopped(self) -> str:
        """Why the screen stopped (``TARGET``, ``BUDGET``, ``EXHAUSTED``), or ``NOT_FINISHED``."""
        if self.drawn_matched + len(self.matched_ids) >= self.target:
            return TARGET
        if len(self.screened) >= self.budget:
            return BUDGET
        return EXHAUSTED if len(self.screened) >= self.available else NOT_FINISHED

    def reusable(self, *, template: str, max_length: int) -> bool:
        """Whether its losses hold for a run with this template and truncation (the losses depend
        on nothing else of the settings: another caliper, target or budget reuses them)."""
        return (self.template, self.max_length) == (template, max_length)


def screen_path(root, model: str, dataset: str) -> Path:
    """Where the screen of ``dataset`` by ``model`` is kept in the store at ``root``."""
    return Path(root) / SCREENS / model_slug(model) / f"{dataset}.json"


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def record(root, screen: Screen) -> None:
    """Keep ``screen`` (replacing the earlier one of the same model and dataset), written whole then renamed."""
    path = screen_path(root, screen.model, screen.dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = asdict(screen)
    payload["screened"] = [
        {**s, "correct": _finite(s["correct"]), "irrelevant": _finite(s["irrelevant"])} for s in payload["screened"]
    ]
    store_files._atomic_write_bytes(path, json.dumps(payload).encode())


def _screen_of(payload: dict) -> Screen:
    entries = [Screened(int(s["index"]), s["correct"], s["irrelevant"], s.get("skipped")) for s in payload["screened"]]
    return Screen(
        model=str(payload["model"]),
        dataset=str(payload["dataset"]),
        template=str(payload["template"]),
        max_length=int(payload["max_length"]),
        caliper=float(payload["caliper"]),
        target=int(payload["target"]),
        budget=int(payload["budget"]),
        available=int(payload["available"]),
        drawn=int(payload["drawn"]),
        drawn_matched=int(payload["drawn_matched"]),
        screened=entries,
    )


def read_one(path: Path) -> Screen:
    """The screen kept at ``path``; a ScreenError naming the file and what is wrong otherwise."""
    try:
        return _screen_of(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ScreenError(f"{path}: not a kept loss screen ({type(error).__name__}: {error})") from None


def read(root) -> list[Screen]:
    """Every screen kept in the store at ``root`` ([] when none is)."""
    folder = Path(root) / SCREENS
    return [read_one(p) for p in sorted(folder.glob("*/*.json"))] if folder.is_dir() else []


def find(root, model: str, dataset: str) -> Screen | None:
    """The screen of ``dataset`` by ``model`` kept at ``root``, None if there is none."""
    path = screen_path(root, model, dataset)
    return read_one(path) if path.is_file() else None


def summary(screens: list[Screen]) -> pd.DataFrame:
    """One row per screen: model, dataset, the drawn pairs and how many matched, the instructions
    screened, skipped and matched, the budget, the target and why the screen stopped."""
    columns = [
        "model",
        "dataset",
        "drawn pairs",
        "drawn matched",
        "screened",
        "skipped",
        "screened matched",
        "budget",
        "target",
        "stopped",
    ]
    rows = [
        [
            s.model,
            s.dataset,
            s.drawn,
            s.drawn_matched,
            len(s.screened),
            s.skipped,
            len(s.matched_ids),
            s.budget,
            s.target,
            s.why_stopped(),
        ]
        for s in screens
    ]
    return pd.DataFrame(rows, columns=columns)
