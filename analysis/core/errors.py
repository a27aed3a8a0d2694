"""The study's one error base class: anything a user can cause (bad input, a missing file or
model, a run that cannot go on) is a ``StudyError``, which the command line reports as one line."""


class StudyError(Exception):
    """An error the study reports to its user as one line naming what is wrong."""
