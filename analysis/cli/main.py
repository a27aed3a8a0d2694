"""The main parser, the common options of the extraction commands and the dispatch to each command."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from analysis import data
from analysis.cli import calibration_commands, original_commands, publish_commands, split_commands, training_commands
from analysis.core import chapters, registry, settings
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.data import data_files
from analysis.data.records import load_records
from analysis.study import measured, screenshot


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_extraction_arguments(parser: argparse.ArgumentParser, n_samples: int | None) -> None:
    """The options of ``ExtractionSettings``, under the same names, for every command that extracts."""

    def count(flag: str, help: str, default: int | None = None) -> None:
        parser.add_argument(flag, type=_positive_int, default=default, help=help)

    count(
        "--n-samples",
        f"N samples of each condition or file, a seeded random sample of its records (default: {n_samples or 'all'})",
        n_samples,
    )
    count("--max-length", "truncate each sample to this many tokens (default: %(default)s)", settings.MAX_LENGTH)
    parser.add_argument(
        "--template", choices=["base", "instruct"], help="prompt template (default: from the model registry)"
    )
    count(
        "--batch-size",
        "samples per forward/backward pass (default: 1 on a CPU, where batching saves nothing; 8 on a GPU)",
    )
    count(
        "--token-budget",
        "padded tokens per batch at most; long samples run alone (default: %(default)s)",
        settings.TOKEN_BUDGET,
    )
    parser.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    count("--threads", "CPU threads for torch (default: the cores free when it starts; with Ray: CPUs per worker)")
    count(
        "--shard-size",
        "store results after this many samples; an interrupted run recomputes at most these "
        "(with Ray: samples per shard) (default: %(default)s)",
        settings.SHARD_SIZE,
    )
    parser.add_argument("--entry-stats", action="store_true", help="also store mean/max/min of the gradient entries")
    parser.add_argument(
        "--keep-spectra",
        action="store_true",
        help="also store every gradient's singular values (column singular_values; local executor)",
    )
    parser.add_argument(
        "--retry-out-of-memory",
        action="store_true",
        help="compute again the samples recorded as skipped for lack of memory (e.g. on a larger GPU)",
    )
    parser.add_argument("--token-energy-passes", type=int, default=0, metavar="K", help=ENERGY_HELP)
    parser.add_argument(
        "--scored-subsets",
        type=int,
        default=1,
        metavar="K",
        help="K draws of scored tokens per sample of a scored-subset condition, through one forward pass (1: one)",
    )


ENERGY_HELP = "also the token energy (chapter Where the gap comes from): exact if R <= K, else K sign passes; 0: off"


def add_executor_argument(parser: argparse.ArgumentParser) -> None:
    """``--executor``: where the extraction runs."""
    parser.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="local: this process; ray: shards on a Ray cluster, one worker per GPU (pip install .[distributed])",
    )


def extraction_settings(args: argparse.Namespace) -> ExtractionSettings:
    """The extraction settings a command line asked for: each option of a setting's name."""
    return ExtractionSettings.from_dict(vars(args))


def build_parser() -> argparse.ArgumentParser:
    program = "layer-gradient" if sys.argv and sys.argv[0].endswith("layer-gradient") else "python -m analysis"
    parser = argparse.ArgumentParser(prog=program, description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    add_extract_parser(commands)
    add_data_parsers(commands)
    commands.add_parser("models", help="list the offline and paper models")
    add_run_parser(commands)
    add_profile_data_parser(commands)
    add_measured_parser(commands)
    add_screenshot_parser(commands)
    original_commands.add_parsers(commands)
    training_commands.add_train_parser(commands, _positive_int)
    publish_commands.add_parsers(commands)
    calibration_commands.add_parsers(commands)
    split_commands.add_parsers(commands)
    return parser


def add_extract_parser(commands) -> None:
    """``extract``: statistics of chosen models and conditions into a store."""
    extract = commands.add_parser("extract", help="compute per-sample gradient statistics into a results store")
    extract.add_argument(
        "--model", required=True, help="offline name (gemma-3-270m, smollm2-135m-instruct), local folder or hub id"
    )
    extract.add_argument(
        "--data", required=True, nargs="+", help="condition key(s) like aqua/detailed/correct, or JSON file path(s)"
    )
    extract.add_argument("--out", required=True, help="results store directory")
    extract.add_argument(
        "--revision",
        help="hub revision of --model: a commit sha, branch or tag (default: the commit "
        "pinned in the registry for the paper's models, else the default branch); hub models only",
    )
    add_extraction_arguments(extract, n_samples=None)
    extract.add_argument(
        "--data-dir", help=f"data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)"
    )
    extract.add_argument(
        "--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)"
    )
    extract.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_executor_argument(extract)
    extract.add_argument(
        "--ray-address",
        help="with --executor ray: auto or HOST:PORT of a running cluster "
        "(default: $RAY_ADDRESS if set, else a Ray instance started on this machine)",
    )


def add_data_parsers(commands) -> None:
    """``data list`` and ``data fetch``."""
    data_cmd = commands.add_parser("data", help="list or download the study's data files")
    data_sub = data_cmd.add_subparsers(dest="data_command", required=True)
    listing = data_sub.add_parser("list", help="print the conditions with their sample counts")
    listing.add_argument("--data-dir")
    listing.add_argument("--length-control", action="store_true", help="include the derived length-control conditions")
    listing.add_argument(
        "--answer-scored",
        action="store_true",
        help="include the answer-scored conditions (the final answer's tokens scored alone; built from two files)",
    )
    listing.add_argument(
        "--scored-subset",
        action="store_true",
        help="include the scored-subset conditions (a Detailed CoT scored on as many tokens as its answer has after "
        "it, at random or matched in loss to the answer's)",
    )
    fetch = data_sub.add_parser("fetch", help="download the data files from the original study's repository")
    fetch.add_argument("--data-dir")
    fetch.add_argument(
        "--base-url", default=data_files.SOURCE_URL, help="where to download from (default: the pinned commit)"
    )


def add_run_parser(commands) -> None:
    """``run``: a profile from extraction to book."""
    from analysis.profiles import PROFILES

    run = commands.add_parser("run", help="extract a profile's results, execute the notebooks and build the book")
    run.add_argument(
        "--profile",
        choices=list(PROFILES),
        default="cpu",
        help="; ".join(f"{p.name}: {p.description}" for p in PROFILES.values()),
    )
    run.add_argument(
        "--results-dir", "--results", dest="results_dir", help="results store directory (default: results/<profile>)"
    )
    run.add_argument("--data-dir", help=f"data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)")
    run.add_argument("--no-book", action="store_true", help="only extract; do not execute notebooks or build the book")
    add_executor_argument(run)
    run.add_argument(
        "--notebook",
        action="append",
        dest="notebooks",
        metavar="NAME",
        help="execute only this notebook (repeatable; default: every notebooks/*.py)",
    )
    run.add_argument(
        "--threads",
        type=_positive_int,
        help="CPU threads for torch during extraction (default: the profile's, else the cores free when it starts)",
    )
    run.add_argument(
        "--retry-out-of-memory",
        action="store_true",
        help="compute again the samples recorded as skipped for lack of memory (e.g. on a larger GPU)",
    )
    run.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def add_profile_data_parser(commands) -> None:
    """``profile-data``: a page placing the user's data among the reference settings of one model."""
    from analysis.study import your_data_run

    sub = commands.add_parser(
        "profile-data",
        help="place your own data file(s) among the study's reference settings "
        "on one model: extraction, scratch control, a standalone HTML page",
    )
    sub.add_argument("--model", required=True, help="offline name, local folder or hub id")
    sub.add_argument(
        "--data",
        required=True,
        nargs="+",
        help="your data file(s): .json (a list of records) or .jsonl; "
        "records {instruction, input?, output} or {messages: [{role, content}, ...]}",
    )
    sub.add_argument(
        "--reference",
        default=",".join(your_data_run.DEFAULT_REFERENCE_DATASETS),
        help="comma-separated reasoning datasets whose None/Simplified/Detailed CoT files (correct and "
        "irrelevant) are the references (default: %(default)s)",
    )
    add_extraction_arguments(sub, n_samples=your_data_run.DEFAULT_SAMPLES)
    sub.add_argument(
        "--reference-samples",
        type=_positive_int,
        default=your_data_run.DEFAULT_REFERENCE_SAMPLES,
        help="N samples of every reference condition, a seeded random sample, computed once per --out "
        "(default: %(default)s)",
    )
    sub.add_argument(
        "--out", default=str(your_data_run.DEFAULT_OUT), help="results store directory (default: %(default)s)"
    )
    sub.add_argument("--html", help="the standalone page (default: <out>/your_data.html)")
    sub.add_argument("--notebook", help="the executed notebook, for a book (default: <out>/your_data.ipynb)")
    sub.add_argument("--no-scratch", action="store_true", help="skip the randomly initialised control")
    sub.add_argument(
        "--data-dir", help=f"the study's data directory (default: ${data_files.DATA_ENV} or ./data/layer_gradient)"
    )
    sub.add_argument("--seed", type=int, default=0, help="seed of the scratch model, the folds and the bootstrap")
    sub.add_argument("--n-resamples", type=_positive_int, default=1000, help="bootstrap resamples")
    sub.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def add_measured_parser(commands) -> None:
    """``measured``: a finished run's row appended to the measured runs."""
    sub = commands.add_parser(
        "measured", help="append a store's latest finished run to the measured runs (the execution statistics)"
    )
    sub.add_argument("results_dir", help="the results store whose run log holds the run")
    sub.add_argument(
        "--file",
        default=str(chapters.PROJECT_ROOT / measured.MEASURED_FILE),
        help="the measured runs' file (default: %(default)s)",
    )


def run_measured(args: argparse.Namespace) -> int:
    file = Path(args.file)
    row = measured.append_run(Path(args.results_dir), file=file)
    print(", ".join(f"{k}={v}" for k, v in row.items()))
    cells = measured.profile_cells(measured.read_measured(file))
    if row["profile"] in cells:
        print(f"the README states {row['profile']}: {cells[row['profile']]}")
    else:
        print("not a whole run (install not part of it, a store resumed or local changes): not in the README")
    return 0


def add_screenshot_parser(commands) -> None:
    """``screenshot``: the README's picture of a built book's first page."""
    sub = commands.add_parser("screenshot", help="render a built book's first page for the README (make screenshot)")
    sub.add_argument(
        "--book",
        default=str(chapters.PROJECT_ROOT / "book" / "_build" / "html" / "index.html"),
        help="the built book's first page (default: %(default)s)",
    )


def run_screenshot(args: argparse.Namespace) -> int:
    image, digest = screenshot.write_screenshot(Path(args.book))
    print(f"wrote {image} and {digest}")
    return 0


def run_profile_data(args: argparse.Namespace) -> int:
    from analysis.study import your_data_run

    datasets = [d.strip() for d in args.reference.split(",") if d.strip()]
    result = your_data_run.run(
        args.model,
        args.data,
        extraction_settings(args),
        reference_datasets=datasets,
        reference_samples=args.reference_samples,
        out=args.out,
        html=args.html,
        notebook=args.notebook,
        data_dir=args.data_dir,
        seed=args.seed,
        n_resamples=args.n_resamples,
        scratch=not args.no_scratch,
        progress=not args.no_progress,
        say=lambda line: print(line, file=sys.stderr),
    )
    computed = sum(r["computed"] for r in result.extraction)
    print(
        f"{computed} samples computed in {result.seconds['extraction']:.0f} s, page in "
        f"{result.seconds['notebook']:.0f} s; open {result.html}"
    )
    return 0


def run_extract(args: argparse.Namespace) -> int:
    from analysis.extract import models, runner
    from analysis.store import ResultsStore

    chosen = extraction_settings(args)
    specs = [data.resolve(spec, args.data_dir) for spec in args.data]  # every input is checked before any compute
    for resolved in specs:
        load_records(resolved.path)
        if resolved.sha256_ok is False:
            print(
                f"warning: {resolved.path}: sha256 {resolved.sha256[:12]}… differs from the published file; "
                "the results record this (column data_sha256_ok)",
                file=sys.stderr,
            )
    if args.executor == "ray":
        if args.revision:
            raise StudyError(
                "--revision is not available with --executor ray (the workers load the registry's pinned "
                "revision); use --executor local, or a local model folder of that revision"
            )
        return run_extract_on_ray(args, chosen)
    if args.ray_address:
        raise StudyError("--ray-address needs --executor ray")
    store = ResultsStore(args.out)
    with runner.torch_threads(chosen.threads):
        loaded = models.load(
            args.model,
            template=chosen.template,
            device=chosen.device,
            trust_remote_code=args.trust_remote_code,
            revision=args.revision,
        )
        facts = loaded.facts()
        print(
            f"{args.model}: revision {facts.revision}, {facts.attention} attention, chat template sha256 "
            f"{(facts.chat_template_sha256 or 'none')[:12]}, transformers {facts.transformers}",
            file=sys.stderr,
        )
        summaries = (
            summary
            for specs in runner.shared_passes(args.data)
            for summary in runner.extract_together(
                loaded, specs, store, settings=chosen, data_dir=args.data_dir, progress=not args.no_progress
            )
        )
        for summary in summaries:
            skipped = ", ".join(f"{n} {why}" for why, n in summary.skipped.items()) or "none"
            pace = f"{summary.seconds_per_sample:.2f} s/sample" if summary.computed else "nothing to compute"
            print(
                f"{summary.model} {summary.condition}: {summary.computed} computed, {summary.already_done} already "
                f"stored, skipped: {skipped}; {pace}"
            )
    return 0


def run_extract_on_ray(args: argparse.Namespace, chosen: ExtractionSettings) -> int:
    """``extract --executor ray``: the same rows, computed by Ray workers; exit 1 if some samples failed."""
    from analysis.extract import distributed

    report = distributed.run_extraction(
        [(args.model, chosen.template, spec) for spec in args.data],
        args.out,
        chosen,
        address=args.ray_address,
        data_dir=args.data_dir,
        trust_remote_code=args.trust_remote_code,
        progress=not args.no_progress,
    )
    if args.no_progress:
        print(report.describe())
    return 0 if report.ok else 1


def run_data(args: argparse.Namespace) -> int:
    if args.data_command == "fetch":
        written = data_files.fetch(args.data_dir, args.base_url)
        print(
            f"{len(written)} files downloaded into {data_files.data_dir(args.data_dir)}, "
            f"all {len(data_files.expected_sha256())} verified"
        )
        return 0
    directory = data_files.data_dir(args.data_dir)
    print(f"{'condition':42} {'samples':>7}  file")
    views = dict(length_control=args.length_control, answer_scored=args.answer_scored, scored_subset=args.scored_subset)
    for condition in data.conditions_matching(**views):
        path = directory / condition.relative_path
        count = len(load_records(path)) if path.is_file() else "missing"
        print(f"{condition.key:42} {count!s:>7}  {condition.relative_path}")
    return 0


def run_models(_: argparse.Namespace) -> int:
    for name, info in {**registry.OFFLINE_MODELS, **registry.PAPER_MODELS}.items():
        pinned = f"  revision {info.revision[:12]}" if info.revision else ""
        print(f"{name:34} {info.template:9} {info.layers or '?':>3} layers  {info.description}{pinned}")
    return 0


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (a scheduler stopping the job) ends a run like Ctrl-C: what is computed gets stored.

    SIGINT gets the same handler because a job started in the background by a shell inherits
    SIGINT as ignored, and `kill -INT` must still stop it cleanly.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_pipeline(args: argparse.Namespace) -> int:
    from analysis.study import pipeline

    result = pipeline.run_profile(
        args.profile,
        args.results_dir,
        args.data_dir,
        executor=args.executor,
        book=not args.no_book,
        notebooks=args.notebooks,
        progress=not args.no_progress,
        threads=args.threads,
        retry_out_of_memory=args.retry_out_of_memory,
    )
    computed = sum(r["computed"] for r in result.extraction)
    trained = sum(r.get("kind") == "training" for r in result.extraction)
    done = (
        f"{trained} training runs finished" if result.profile.source == "training" else f"{computed} samples computed"
    )
    print(f"profile {result.profile.name}: {done}, results in {result.results_dir}, {result.seconds:.0f} s in all")
    if result.book_index is not None:
        print(f"book: open {result.book_index}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {
        "extract": run_extract,
        "data": run_data,
        "models": run_models,
        "run": run_pipeline,
        "profile-data": run_profile_data,
        "measured": run_measured,
        "screenshot": run_screenshot,
        **original_commands.HANDLERS,
        "train": training_commands.run_train,
        **publish_commands.HANDLERS,
        **calibration_commands.HANDLERS,
        **split_commands.HANDLERS,
    }
    try:
        with _sigterm_as_interrupt():
            return handlers[args.command](args)
    except (StudyError, OSError) as error:
        if args.debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: results computed so far are stored; run the same command again to continue", file=sys.stderr
        )
        return 130
