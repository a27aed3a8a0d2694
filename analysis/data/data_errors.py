"""What the study cannot use of its data: ``DataError``, raised where the data files are located,
checked and downloaded (:mod:`analysis.data.data_files`), read (:mod:`analysis.data.records`) and looked up as
conditions (:mod:`analysis.data`)."""

from __future__ import annotations

from analysis.core.errors import StudyError


class DataError(StudyError, ValueError):
    """A data file, a record or a condition key that the study cannot use."""
