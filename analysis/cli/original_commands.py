"""The commands of the original study's statistics: ``import-original`` (its released files into a
results store) and ``add-token-counts`` (R, the response token count, added to a store imported
before, from each model's tokenizer)."""

from __future__ import annotations

import argparse
import sys

from analysis.data import data_files


def _tokenizer_folder(text: str) -> tuple[str, str]:
    model, sep, folder = text.partition("=")
    if not sep or not model or not folder:
        raise argparse.ArgumentTypeError(
            f"expected MODEL=FOLDER (e.g. qwen2_1_5b=/models/qwen2-tokenizer), got {text!r}"
        )
    return model, folder


def add_tokenizer_arguments(sub: argparse.ArgumentParser) -> None:
    """``--tokenizer MODEL=FOLDER`` (repeatable) and ``--no-token-counts``: where R's tokenizers come from."""
    sub.add_argument(
        "--tokenizer",
        action="append",
        type=_tokenizer_folder,
        default=[],
        metavar="MODEL=FOLDER",
        help="a local folder holding MODEL's tokenizer, used instead of the hub (repeatable; MODEL an original "
        "folder name or registry id); only the tokenizer is read, never weights",
    )
    sub.add_argument(
        "--no-token-counts",
        action="store_true",
        help="load no tokenizer: R (response token counts) stays missing; add it later with add-token-counts",
    )


def token_counter(args: argparse.Namespace):
    """The tokenizers a command line asked for (hub ids by default)."""
    from analysis.extract.original_sources import model_for
    from analysis.extract.token_counts import TokenCounter

    folders = {model_for(model): folder for model, folder in args.tokenizer}
    return TokenCounter(folders=folders, enabled=not args.no_token_counts)


def add_parsers(commands) -> None:
    """Add ``import-original`` and ``add-token-counts`` to the command line."""
    sub = commands.add_parser(
        "import-original",
        help="read the original study's per-sample gradient statistics (grads_exp/<task>/<model>/grads_*.jsonl) "
        "into a results store, instead of extracting them; R (response token counts) from each model's tokenizer",
    )
    sub.add_argument(
        "source",
        help="a folder holding grads_exp trees or .tar.gz/.tgz/.tar/.zip archives of them (walked; archive members "
        "are streamed, not unpacked), one archive, one .jsonl file (with --model and --condition), "
        "or hf://datasets/MingLiiii/Layer_Gradient (downloads only the files asked for)",
    )
    sub.add_argument("--out", required=True, help="results store directory")
    sub.add_argument(
        "--model", help="one file: its model (an original folder name like qwen2_1_5b, a registry id, or any name)"
    )
    sub.add_argument("--condition", help="one file: its condition, e.g. aqua/none/correct")
    sub.add_argument(
        "--template", choices=["base", "instruct"], help="one file of a model outside the registry: its prompt template"
    )
    sub.add_argument("--models", nargs="+", help="only these models (folder names or registry ids; default: all)")
    sub.add_argument("--conditions", nargs="+", help="only these conditions (default: all 56 study files)")
    sub.add_argument(
        "--data-dir", help=f"the study's data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)"
    )
    sub.add_argument("--cache-dir", help="hub sources: huggingface_hub's cache folder (default: its own)")
    sub.add_argument(
        "--strict", action="store_true", help="import nothing from a file that has a rejected line (default: the rest)"
    )
    add_tokenizer_arguments(sub)
    sub.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    fill = commands.add_parser(
        "add-token-counts",
        help="add R (response token counts) to the rows of a store imported with import-original, from each "
        "model's tokenizer, without importing again",
    )
    fill.add_argument("--store", required=True, help="the results store")
    fill.add_argument("--model", action="append", dest="models", help="only this model (repeatable; default: all)")
    fill.add_argument(
        "--data-dir", help=f"the study's data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)"
    )
    add_tokenizer_arguments(fill)


def run_import_original(args: argparse.Namespace) -> int:
    """Import, one file at a time, recording each file in the run log; every line not stored is reported.

    Exit status 1 when any line or file was rejected (after importing the rest), else 0."""
    from analysis.extract import original_import
    from analysis.store import ResultsStore, runlog

    store = ResultsStore(args.out)
    profile = {"name": "import-original", "source": args.source, "origin": original_import.ORIGIN}
    with runlog.recording(args.out, profile, packages=runlog.IMPORT_PACKAGES) as log:

        def on_file(report) -> None:
            log.add_import(report.as_record())
            print(report.summary(), file=sys.stderr)
            for line in report.problem_lines():
                print(line, file=sys.stderr)

        result = original_import.import_source(
            args.source,
            store,
            args.data_dir,
            model=args.model,
            condition=args.condition,
            template=args.template,
            models=args.models,
            conditions=args.conditions,
            progress=not args.no_progress,
            cache_dir=args.cache_dir,
            on_file=on_file,
            strict=args.strict,
            counter=token_counter(args),
        )
        with log.changing() as record:
            record.profile["token_counts_unknown"] = result.token_problems
    for model, missing in result.absent.items():
        listed = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        print(f"{model}: no file for {len(missing)} condition(s): {listed}", file=sys.stderr)
    for line in result.token_lines(args.out):
        print(line, file=sys.stderr)
    print(result.summary(args.out))
    return 0 if result.clean else 1


def run_add_token_counts(args: argparse.Namespace) -> int:
    """R for every stored sample that lacks it, one line per model; exit status 1 where some stay unknown."""
    from analysis.extract import token_counts
    from analysis.extract.original_sources import model_for
    from analysis.store import ResultsStore, runlog
    from analysis.store.store_errors import StoreError

    store = ResultsStore(args.store, create=False)
    if not (store.root / "store.json").is_file():
        raise StoreError(f"{args.store}: no results store here (no store.json)")
    models = [model_for(m) for m in args.models] if args.models else None
    profile = {"name": "add-token-counts", "models": models}
    with runlog.recording(args.store, profile, packages=runlog.IMPORT_PACKAGES) as log:
        reports = token_counts.add_to_store(store, token_counter(args), models, args.data_dir)
        with log.changing() as record:
            record.profile["token_counts"] = [r.as_record() for r in reports]
    for report in reports:
        print(report.line())
    if not reports:
        print(f"{args.store}: no stored rows")
    return 1 if any(r.unknown for r in reports) else 0


HANDLERS = {"import-original": run_import_original, "add-token-counts": run_add_token_counts}
