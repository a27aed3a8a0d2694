"""The arms of the chapter "During training": for one model, a run per arm and seed, the model
loaded once and put back to its released weights before each run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from analysis import data
from analysis.core.settings import ExtractionSettings, TrainingSettings
from analysis.data.records import load_records
from analysis.extract import models, runner
from analysis.train import loop
from analysis.train.naming import TrainingRunId


def runs_of(model: str, settings: TrainingSettings) -> list[TrainingRunId]:
    """Every (arm, seed) run of a model under the settings, arms first."""
    return [
        TrainingRunId(model, settings.dataset, arm, settings.responses, seed)
        for arm in settings.arms
        for seed in settings.seeds
    ]


def check_conditions(settings: TrainingSettings, data_dir=None) -> None:
    """Every condition trained on or probed exists and its file is readable (a DataError if not),
    before any model is loaded."""
    trained = [f"{settings.dataset}/{arm}/{settings.responses}" for arm in settings.arms]
    for spec in trained + loop.probe_conditions(settings):
        load_records(data.resolve(spec, data_dir).path)


def train_model(
    model: str,
    results_dir: str | Path,
    *,
    settings: TrainingSettings,
    extraction: ExtractionSettings,
    data_dir=None,
    progress: bool = True,
    keep_checkpoint: bool = False,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Run every arm and seed of ``model`` that is not finished; one record per run (``progress``: a
    progress bar, ``keep_checkpoint``: the last checkpoint kept, ``say``: where lines go)."""
    check_conditions(settings, data_dir)
    todo = [
        run
        for run in runs_of(model, settings)
        if not (loop.run_directory(Path(results_dir), run) / "done.json").is_file()
    ]
    if not todo:
        say(f"{model}: all {len(runs_of(model, settings))} training runs already done")
        return []
    records = []
    with runner.torch_threads(extraction.threads):
        loaded = models.load(model, template=extraction.template, device=extraction.device)
        released = {name: value.detach().clone() for name, value in loaded.model.state_dict().items()}
        first = runs_of(model, settings)[0]
        for run in todo:
            loaded.model.load_state_dict(released)
            say(f"{model}: training {run.run} ({settings.steps} steps of {settings.batch_size})")
            summary = loop.train(
                loaded,
                run,
                results_dir,
                settings=settings,
                extraction=extraction,
                data_dir=data_dir,
                progress=progress,
                keep_checkpoint=keep_checkpoint,
                start_from=first if first != run else None,  # the released weights' probes, computed once
            )
            records.append({"model": model, **summary.as_record()})
    return records
