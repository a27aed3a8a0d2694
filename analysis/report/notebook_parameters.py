"""A page's parameters, checked before it reads anything.

A book page takes the name of the run's profile and where its results are; everything else (the
models, the conditions, the samples and the extraction settings, the bootstrap's seed and
resamples) it reads from that run's record in the run log, so a page can only show what a run
computed. ``models`` and ``conditions`` may name a subset of the run's.

papermill injects parameters as plain Python values and only warns about names a notebook does
not declare. So each page notes the names it has before its ``parameters`` cell
(:func:`names_defined`) and hands every name defined since (:func:`given_parameters`) to
:func:`validate`: a misspelt parameter stops the page with one line naming it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis import profiles, runlog
from analysis.core import chapters
from analysis.core.errors import StudyError
from analysis.profiles import Profile

DEFAULT_PROFILE = "cpu"
PARAMETERS = ("profile", "results_dir", "data_dir", "models", "conditions")


def page_parameters(notebook: str, root: Path = chapters.PROJECT_ROOT) -> tuple[str, ...]:
    """A page's own parameters, beyond the common ones: the other names its parameters cell assigns."""
    return tuple(name for name in chapters.parameters_of(notebook, root) if name not in PARAMETERS)


class ParameterError(StudyError, ValueError):
    """A page parameter that is unknown, or has a wrong type or value."""


@dataclass(frozen=True)
class NotebookParameters:
    """A page's parameters, checked, with the run they show."""

    notebook: str
    profile: Profile  # as the run log recorded it (else as the project defines it)
    models: tuple[str, ...]
    conditions: tuple[str, ...]
    results_dir: Path
    data_dir: Path | None
    recorded: bool  # whether the profile comes from the results' run log
    extra: dict = field(default_factory=dict)  # the page's own parameters (page_parameters)

    @property
    def n_samples(self) -> int | None:
        return self.profile.extraction.n_samples

    @property
    def max_length(self) -> int:
        return self.profile.extraction.max_length

    @property
    def seed(self) -> int:
        return self.profile.seed

    @property
    def n_resamples(self) -> int:
        return self.profile.n_resamples


def names_defined(namespace: dict) -> set[str]:
    """The public names of a notebook's namespace (IPython's own start with an underscore)."""
    return {name for name in namespace if not name.startswith("_") and name not in ("In", "Out", "exit", "quit")}


def given_parameters(namespace: dict, before: set[str]) -> dict:
    """The names a page's parameters cell (and papermill's injected one) defined, with their values
    (the mark ``before`` itself left out)."""
    return {name: namespace[name] for name in names_defined(namespace) - before if namespace[name] is not before}


def _fail(name: str, expected: str, value) -> ParameterError:
    return ParameterError(f"notebook parameter {name}: expected {expected}, got {value!r} ({type(value).__name__})")


def wrong_kind(name: str, expected: str, value) -> ParameterError:
    """The one-line error of a parameter whose value is not of the kind ``expected`` names."""
    return _fail(name, expected, value)


def reject_unknown(notebook: str, given: dict, allowed: Sequence[str]) -> None:
    """Stop at the first name in ``given`` that ``notebook`` has no parameter of (papermill only warns)."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ParameterError(
            f"notebook parameter {unknown[0]}: {notebook} has no such parameter (misspelt?); "
            f"its parameters: {', '.join(allowed)}"
        )


def positive_int(name: str, value, *, allow_none: bool = False) -> int | None:
    """``value`` checked to be a positive integer (or None where ``allow_none``)."""
    if value is None and allow_none:
        return None
    if not (isinstance(value, int) and value > 0):
        raise _fail(name, "a positive integer" + (" or None" if allow_none else ""), value)
    return value


def integer(name: str, value) -> int:
    """``value`` checked to be an integer."""
    if not isinstance(value, int):
        raise _fail(name, "an integer", value)
    return value


def _subset(name: str, value, available: tuple[str, ...]) -> tuple[str, ...]:
    """``value`` (a name, a list of names or None for all) checked against what the run holds."""
    if value is None:
        return available
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise _fail(name, "a non-empty list of names (or one name, or None for all)", value)
    if len(set(value)) != len(value):
        raise ParameterError(f"notebook parameter {name}: repeated entries in {list(value)!r}")
    missing = [v for v in value if v not in available]
    if missing:
        raise ParameterError(
            f"notebook parameter {name}: {missing[0]!r} is not among this page's {name} in the run "
            f"({', '.join(available) or 'none'})"
        )
    return tuple(value)


def _path(name: str, value, allow_none: bool) -> Path | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise _fail(name, "a directory path" + (" or None" if allow_none else ""), value)
    return Path(value)


def optional_path(name: str, value) -> Path | None:
    """A path parameter that may be None (e.g. a file that a page shows when it exists)."""
    return _path(name, value, True)


def run_profile(name: str, results_dir: Path) -> tuple[Profile, bool]:
    """The profile of the latest run of ``name`` recorded in the results' run log (and True), else
    the project's profile of that name (and False)."""
    recorded = [run for run in runlog.read(results_dir) if run.profile.get("name") == name]
    if recorded:
        return Profile.from_dict(recorded[-1].profile), True
    try:
        return profiles.get_profile(name), False
    except profiles.ProfileError:
        raise ParameterError(
            f"notebook parameter profile: no run of profile {name!r} is recorded in {results_dir / runlog.RUN_LOG}, "
            f"and the project has no such profile ({', '.join(profiles.PROFILES)})"
        ) from None


def validate(notebook: str, given: dict | None = None) -> NotebookParameters:
    """Checked parameters of ``notebook``: ``given`` maps each name the page was given to its value."""
    if notebook not in profiles.NOTEBOOKS:
        raise ParameterError(f"unknown notebook {notebook!r}; notebooks: {', '.join(profiles.NOTEBOOKS)}")
    given = dict(given or {})
    own = page_parameters(notebook)
    reject_unknown(notebook, given, (*PARAMETERS, *own))
    name = given.get("profile", DEFAULT_PROFILE)
    if not isinstance(name, str) or not name:
        raise _fail("profile", "a profile name", name)
    results = _path("results_dir", given.get("results_dir") or f"results/{name}", False)
    profile, recorded = run_profile(name, results)
    models = _subset("models", given.get("models"), profile.models)
    conditions = _subset("conditions", given.get("conditions"), profile.conditions_for(notebook))
    extra = {key: given.get(key) for key in own}
    return NotebookParameters(
        notebook, profile, models, conditions, results, _path("data_dir", given.get("data_dir"), True), recorded, extra
    )
