"""What goes wrong with a results store: ``StoreError``, and ``DamagedPart`` for a part file that
cannot be read (raised by :mod:`analysis.store.store_files`, which reads the parts)."""

from __future__ import annotations

import os
from pathlib import Path

from analysis.core.errors import StudyError


class StoreError(StudyError, RuntimeError):
    """The results store cannot be used as asked."""


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
