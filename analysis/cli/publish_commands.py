"""The publishing commands: ``book-config`` (the repository and launch buttons of a published book)
and ``publish-notebooks`` (the executed notebooks with the store beside them, for the launch
buttons to open). The publishing workflow runs both; neither is needed to build a book locally."""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.core import chapters
from analysis.core.errors import StudyError
from analysis.study import publish


def add_parsers(commands) -> None:
    """Add ``book-config`` and ``publish-notebooks`` to the command line."""
    config = commands.add_parser(
        "book-config", help="fill _config.yml's repository and launch buttons for a published book"
    )
    config.add_argument("--repository", required=True, help="OWNER/NAME of the repository that publishes the book")
    config.add_argument("--server-url", default="https://github.com", help="the repository host (github.server_url)")
    config.add_argument(
        "--branch", default=publish.NOTEBOOKS_BRANCH, help="the branch the executed notebooks are published to"
    )
    config.add_argument("--path-to-book", default="", help="the book's folder on that branch (e.g. original)")
    config.add_argument("--book-url", help="this book's published address: its footer links the CITATION.cff there")
    config.add_argument(
        "--other-book",
        action="append",
        default=[],
        help="address of another published book, linked from every page (repeat for each book)",
    )
    config.add_argument(
        "--other-title",
        action="append",
        default=[],
        help="how that link names the book (one per --other-book, in order)",
    )
    config.add_argument(
        "--config", default=str(chapters.PROJECT_ROOT / "_config.yml"), help="the configuration to fill"
    )
    config.add_argument("--out", help="where to write the filled configuration (default: over --config)")

    notebooks = commands.add_parser(
        "publish-notebooks", help="copy a built book's executed notebooks, with its store, for the launch buttons"
    )
    notebooks.add_argument("--profile", required=True, help="the profile the book was built with")
    notebooks.add_argument("--out", required=True, help="the folder to publish into (the book's path on the branch)")
    notebooks.add_argument("--book-root", default=str(chapters.PROJECT_ROOT), help="the folder the book was built in")
    notebooks.add_argument("--repository", help="OWNER/NAME: adds a first cell that installs the project where absent")
    notebooks.add_argument("--server-url", default="https://github.com")
    notebooks.add_argument("--branch", default=publish.NOTEBOOKS_BRANCH)
    notebooks.add_argument("--store-url", help="the published results.parquet, fetched by that first cell")


def run_book_config(args: argparse.Namespace) -> int:
    overlay = publish.book_config(
        args.repository,
        server_url=args.server_url,
        branch=args.branch,
        path_to_book=args.path_to_book,
        book_url=args.book_url,
        other_books=publish.other_books(args.other_book, args.other_title),
    )
    target = publish.write_book_config(Path(args.config), overlay, Path(args.out) if args.out else None)
    print(f"book configuration for {args.repository} ({args.branch}): {target}")
    return 0


def run_publish_notebooks(args: argparse.Namespace) -> int:
    from analysis.study import book

    first = None
    if args.repository:
        if not args.store_url:
            raise StudyError("publish-notebooks: --repository needs --store-url (the published store)")
        first = publish.colab_cell_source(args.repository, args.server_url, args.branch, args.store_url)
    root = Path(args.book_root)
    written = publish.publish_notebooks(root, Path(args.out), args.profile, root / book.BOOK_EXPORT, first_cell=first)
    folder = Path(args.out) / "book" / "notebooks"
    beside = (folder / publish.STORE_NAME).is_file()
    store = f"with {publish.STORE_NAME}" if beside else f"without the store (over {publish.STORE_LIMIT_BYTES >> 20} MB)"
    print(f"published {len(written)} notebooks {store} into {folder}")
    return 0


HANDLERS = {"book-config": run_book_config, "publish-notebooks": run_publish_notebooks}
