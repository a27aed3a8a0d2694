"""The ``split`` command: ``python -m analysis split RESULTS_DIR [--stat nuclear_norm|frobenius]
[--json]``, the gap split into its steps as the check that declares the split shows it
(``report.chain``), a table with each row's outcome, and the instructions each condition dropped."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd

COLUMNS = ["model", "scope", "step", "estimate", "low", "high", "instructions"]
STATS = ("nuclear_norm", "frobenius")  # findings.gap_split.STATS, named here to keep the parser light
NORMS = {"nuclear_norm": "nuclear norm", "frobenius": "Frobenius norm"}  # as the chain's tables name them


def add_parsers(commands) -> None:
    """Add ``split`` to the command line."""
    sub = commands.add_parser("split", help="split F1's gap into the phrase, the reasoning, which tokens, how many")
    sub.add_argument("results_dir", help="results store directory (or an exported Parquet file)")
    sub.add_argument("--stat", choices=STATS, default=STATS[0], help="the norm (default: %(default)s)")
    sub.add_argument("--json", action="store_true", help="print the rows, dropped and skipped samples as JSON")
    sub.add_argument("--n-resamples", type=int, help="bootstrap resamples (default: the store's last run's)")


def _records(frame: pd.DataFrame) -> list[dict]:
    """A table's lines as JSON-ready dicts (NaN as null)."""
    return [
        {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in line.items()}
        for line in json.loads(frame.to_json(orient="records"))
    ]


def run_split(args: argparse.Namespace) -> int:
    from analysis.report import chain
    from analysis.report.load import ReportError

    check = chain.chain_check()
    if check is None:
        raise SystemExit("no check of the registry declares a split")
    stored = chain.load_chain(args.results_dir, check, n_resamples=args.n_resamples)
    table, dropped = stored.table[stored.table["norm"] == NORMS[args.stat]], stored.dropped
    if table.empty:
        raise ReportError(
            f"{args.results_dir}: the store holds no {NORMS[args.stat]} ({args.stat}) of the split's conditions"
        )
    if args.json:
        payload = {
            "stat": args.stat,
            "rows": _records(table),
            "dropped": _records(dropped),
            "skipped": _records(stored.skipped),
        }
        print(json.dumps(payload, indent=1))
        return 0
    shown = table[[*COLUMNS, "outcome"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for line in table[table["note"] != ""].itertuples():
        print(f"{line.model} {line.scope} {line.step}: {line.note}")
    if dropped.empty:
        print("No condition dropped an instruction.")
    for line in dropped.itertuples():
        print(f"{line.model} {line.dataset}/{line.condition}: {line.dropped} of {line.of} instructions dropped")
    for line in stored.skipped.itertuples():
        print(f"{line.model} {line.condition}: {line.samples} samples skipped ({line.reason})")
    return 0


HANDLERS = {"split": run_split}
