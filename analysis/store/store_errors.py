"""What goes wrong with a results store: ``StoreError`` (the store, or the run log beside it, cannot
be used), and ``DamagedPart`` for a part file that cannot be read (raised by
:mod:`analysis.store.store_files`, which reads the parts)."""

from __future__ import annotations

import os
from pathlib import Path

from analysis.core.errors import StudyError


class StoreError(StudyError, RuntimeError):
    """The results store, or a file kept beside it (the run log), cannot be used as asked; the
    message names the file and what is wrong with it."""


class DamagedPart(StoreError):
    """A part file of the store cannot be read (cut short, overwritten): the message names it and
    says how to recover."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = Path(path)
        # <kind>/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet
        skipped = len(self.path.parts) >= 7 and self.path.parts[-7] == "skipped"
        held = (
            "the samples it recorded as skipped are tried again"
            if skipped
            else "it stores again exactly the samples this part held"
        )
        super().__init__(
            f"{self.path}: damaged part of the results store ({reason}); remove this file and run again the "
            f"command that wrote it (extract, run or import-original): {held}, and keeps the other results"
        )
