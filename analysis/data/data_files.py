"""Where the study's data files are, their published sha256, and their download.

Files are looked up in ``--data-dir``, else in ``$LAYER_GRADIENT_DATA``, else in
``./data/layer_gradient``. ``python -m analysis data fetch`` downloads them from the original
study's repository at a pinned commit and checks each against the sha256 that ``SHA256SUMS``
(beside this module) publishes for it.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import IO

from analysis.data.data_errors import DataError

DATA_ENV = "LAYER_GRADIENT_DATA"
DEFAULT_DATA_DIR = Path("data/layer_gradient")
SOURCE_REPOSITORY = "MingLiiii/Layer_Gradient"
SOURCE_COMMIT = "e2072e8daa9f250cea025b2d3fa9590a901ca766"
SOURCE_URL = f"https://raw.githubusercontent.com/{SOURCE_REPOSITORY}/{SOURCE_COMMIT}/data"
DOWNLOAD_TIMEOUT = 60  # seconds without an answer from the server


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Where the data files are: the argument, else $LAYER_GRADIENT_DATA, else ./data/layer_gradient."""
    if explicit:
        return Path(explicit)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return DEFAULT_DATA_DIR


@lru_cache(maxsize=1)
def expected_sha256() -> dict[str, str]:
    """The published sha256 of every data file, keyed by relative path."""
    table = {}
    for line in (Path(__file__).with_name("SHA256SUMS")).read_text().splitlines():
        digest, path = line.split(maxsplit=1)
        table[path.removeprefix("./")] = digest
    return table


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    """sha256 hex digest of a file's bytes, read in chunks (the original study's files are large)."""
    with open(path, "rb") as handle:
        return stream_sha256(handle, chunk)


def stream_sha256(handle: IO[bytes], chunk: int = 1 << 22) -> str:
    """sha256 hex digest of an open binary stream's remaining bytes, read in chunks."""
    digest = hashlib.sha256()
    while block := handle.read(chunk):
        digest.update(block)
    return digest.hexdigest()


def fetch(directory: str | os.PathLike | None = None, base_url: str = SOURCE_URL, force: bool = False) -> list[Path]:
    """Download every data file of the study into ``directory`` and verify its sha256.

    Files already present with the right hash are kept (all are downloaded again with
    ``force``); a present file with another hash is replaced; a download with a wrong hash is
    removed and reported. Returns the files written.
    """
    import pooch  # only a download needs it (a machine without it can still read the data)

    target = data_dir(directory)
    written = []
    with _quiet(pooch.get_logger()):
        for relative, digest in sorted(expected_sha256().items()):
            path = target / relative
            url = f"{base_url}/{relative}"
            if force:
                scratch = path.with_name(f".{path.name}.part")
                scratch.unlink(missing_ok=True)
                download(url, scratch, digest)
                os.replace(scratch, path)
                written.append(path)
            elif download(url, path, digest):
                written.append(path)
    return written


def download(url: str, path: Path, digest: str) -> bool:
    """Make ``path`` the file at ``url`` whose sha256 is ``digest``; False when it already was.

    pooch streams the download into a temporary file beside ``path`` and moves it into place only
    when its hash matches, so a failed or wrong download leaves nothing behind.
    """
    import pooch
    import requests

    actions = []

    def record(fname: str, action: str, _pooch) -> str:
        actions.append(action)
        return fname

    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{digest}",
            fname=path.name,
            path=path.parent,
            processor=record,
            downloader=pooch.HTTPDownloader(timeout=DOWNLOAD_TIMEOUT),
            progressbar=False,
        )
    except requests.RequestException:
        raise  # an OSError: the server or the network, not the file
    except ValueError as error:  # pooch's hash mismatch
        raise DataError(f"{url}: downloaded file does not match its published sha256 {digest}") from error
    return actions != ["fetch"]


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Only warnings from ``logger`` while the block runs (pooch logs every download)."""
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
