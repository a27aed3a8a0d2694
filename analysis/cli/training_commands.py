"""The ``train`` command: ``python -m analysis train --model M --data aqua/none/correct --out DIR``."""

from __future__ import annotations

import argparse
import sys

from analysis import data
from analysis.core import settings
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings, TrainingSettings
from analysis.data import data_files

DEFAULTS = TrainingSettings()


def add_train_parser(commands, positive_int) -> None:
    """The ``train`` subcommand and its options (defaults: :class:`TrainingSettings`)."""
    sub = commands.add_parser(
        "train",
        help="fine-tune a model on study conditions, with probe gradients and weight change at checkpoints",
    )
    sub.add_argument("--model", required=True, help="offline name, local folder or hub id")
    sub.add_argument(
        "--data", required=True, nargs="+", help="condition(s) to train on, one run each: e.g. aqua/none/correct"
    )
    sub.add_argument("--out", required=True, help="results directory (probe rows in its store, runs/ beside)")
    sub.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULTS.seeds), help="one run per seed")
    sub.add_argument("--steps", type=positive_int, default=DEFAULTS.steps, help="AdamW steps (default: %(default)s)")
    sub.add_argument("--train-batch-size", type=positive_int, default=DEFAULTS.batch_size, help="samples per step")
    sub.add_argument("--learning-rate", type=float, default=DEFAULTS.learning_rate)
    sub.add_argument("--weight-decay", type=float, default=DEFAULTS.weight_decay)
    sub.add_argument("--n-probes", type=positive_int, default=DEFAULTS.n_probes, help="held-out probe instructions")
    sub.add_argument("--n-train", type=positive_int, default=DEFAULTS.n_train, help="instructions trained on")
    sub.add_argument(
        "--checkpoints", type=int, nargs="+", default=list(DEFAULTS.checkpoints), help="steps probed and saved"
    )
    sub.add_argument(
        "--probe-settings", nargs="+", default=list(DEFAULTS.probe_settings), help="settings of the probe conditions"
    )
    sub.add_argument("--max-length", type=positive_int, default=settings.MAX_LENGTH, help="tokens per sample")
    sub.add_argument("--template", choices=["base", "instruct"], help="default: from the model registry")
    sub.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    sub.add_argument("--threads", type=positive_int, help="CPU threads for torch")
    sub.add_argument("--data-dir", help=f"data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)")
    sub.add_argument("--keep-checkpoint", action="store_true", help="keep the last checkpoint of a finished run")
    sub.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def run_train(args: argparse.Namespace) -> int:
    """Train each condition of ``--data`` under each seed; one line per run."""
    from analysis.train import arms

    conditions = [data.get_condition(spec) for spec in args.data]
    datasets = {(c.dataset, c.responses) for c in conditions}
    if len(datasets) != 1:
        raise StudyError(
            f"--data: the conditions of one command share a dataset and responses (they share probes); got {sorted(datasets)}"
        )
    dataset, responses = datasets.pop()
    options = vars(args)  # each option of a setting's name, the command's own ones beside
    chosen = TrainingSettings.from_dict(
        {
            **options,
            "dataset": dataset,
            "responses": responses,
            "arms": [c.setting for c in conditions],
            "batch_size": args.train_batch_size,
        }
    )
    extraction = ExtractionSettings.from_dict({**options, "batch_size": 1})
    records = arms.train_model(
        args.model,
        args.out,
        settings=chosen,
        extraction=extraction,
        data_dir=args.data_dir,
        progress=not args.no_progress,
        keep_checkpoint=args.keep_checkpoint,
        say=lambda line: print(line, file=sys.stderr),
    )
    for record in records:
        resumed = f", resumed from step {record['resumed_from']}" if record["resumed_from"] is not None else ""
        print(
            f"{record['model']} {record['run']}: {record['steps_computed']} steps computed{resumed}, "
            f"{record['train_samples']} training samples, {record['seconds']:.0f} s"
        )
    return 0
