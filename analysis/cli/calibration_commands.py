"""The calibration commands: ``python -m analysis training-calibration [--reps R] [--design PROBES
SEEDS LAYERS]``, the table of ``findings.calibration.training_calibration.false_holds_by_scenario``
as Markdown (the numbers the training methods page states); ``python -m analysis simulated-tables``
(``make simulated-tables``), the reproducibility page's simulated tables written into the repository
(``report.reproducibility.commit_simulated_tables``)."""

from __future__ import annotations

import argparse


def add_parsers(commands) -> None:
    """Add ``training-calibration`` and ``simulated-tables`` to the command line."""
    sub = commands.add_parser(
        "training-calibration",
        help="simulate the training rules' false 'holds' in each null scenario (a Markdown table)",
    )
    sub.add_argument("--reps", type=int, default=2000)
    sub.add_argument("--resamples", type=int, default=400)
    sub.add_argument("--seed", type=int, default=0)
    sub.add_argument("--design", type=int, nargs=3, default=(5, 5, 30), metavar=("PROBES", "SEEDS", "LAYERS"))
    add_simulated_tables_parser(commands)


def add_simulated_tables_parser(commands) -> None:
    """Add ``simulated-tables`` to the command line."""
    commands.add_parser(
        "simulated-tables",
        help="compute the reproducibility page's simulated tables and write them into book/_data/simulated",
    )


def run_simulated_tables(args: argparse.Namespace) -> int:
    from analysis.report.reproducibility import commit_simulated_tables

    for path in commit_simulated_tables():
        print(path)
    return 0


def run_training_calibration(args: argparse.Namespace) -> int:
    from analysis.findings.calibration.training_calibration import TrainingDesign, false_holds_by_scenario

    table = false_holds_by_scenario(TrainingDesign(*args.design), args.reps, args.resamples, args.seed)
    print(table.to_markdown(index=False))
    return 0


HANDLERS = {"training-calibration": run_training_calibration, "simulated-tables": run_simulated_tables}
