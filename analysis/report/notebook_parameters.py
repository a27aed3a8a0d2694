"""A page's parameters, checked before it reads anything.

A book page takes the name of the run's profile and where its results are; everything else (the
models, the conditions, the samples and the extraction settings, the bootstrap's seed and
resamples) it reads from that run's record in the run log, so a page can only show what a run
computed. ``models`` and ``conditions`` may name a subset of the run's.

The your-data page (``python -m analysis profile-data``) is of no profile's run: it takes the
user's files, the model and the bootstrap's settings (:func:`validate_data`).

Every page declares its parameters, with their defaults, in its notebook's ``parameters`` cell, and
only there (:func:`declared`). papermill injects parameters as plain Python values and only warns
about names a notebook does not declare. So each page notes the names it has before its
``parameters`` cell (:func:`names_defined`) and hands every name defined since
(:func:`given_parameters`) to :func:`validate` (or :func:`validate_data`): a misspelt parameter
stops the page with one line naming it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, overload

from analysis import data, profiles
from analysis.core import chapters
from analysis.core.errors import StudyError
from analysis.core.registry import resolve_template
from analysis.core.settings import MAX_LENGTH
from analysis.profiles import Profile
from analysis.store import runlog

PARAMETERS = ("profile", "results_dir", "data_dir", "models", "conditions")
# The pages of a profile's run (the profile's book, and the chapters kept to the profiles of one source).
PROFILE_PAGES = (*profiles.NOTEBOOKS, *(n for s in profiles.OWN_CHAPTER_SOURCES for n in profiles.pages(source=s)))
YOUR_DATA = "your_data"  # the page that ``python -m analysis profile-data`` makes, of the user's files


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


@overload
def positive_int(name: str, value, *, allow_none: Literal[False] = False) -> int: ...
@overload
def positive_int(name: str, value, *, allow_none: bool) -> int | None: ...
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


@overload
def _path(name: str, value, allow_none: Literal[False]) -> Path: ...
@overload
def _path(name: str, value, allow_none: bool) -> Path | None: ...
def _path(name: str, value, allow_none: bool) -> Path | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise _fail(name, "a directory path" + (" or None" if allow_none else ""), value)
    return Path(value)


def optional_path(name: str, value) -> Path | None:
    """A path parameter that may be None (e.g. a file that a page shows when it exists)."""
    return _path(name, value, True)


def recorded_profile(name: str, results_dir: Path) -> tuple[Profile, bool]:
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


def declared(notebook: str, given: dict | None) -> dict:
    """The value of every parameter that ``notebook``'s parameters cell declares: the one given, else
    the cell's own; a name the cell does not declare stops the page with one line naming it."""
    given = dict(given or {})
    reject_unknown(notebook, given, chapters.parameters_of(notebook))
    return {**chapters.parameter_defaults(notebook), **given}


def validate(notebook: str, given: dict | None = None) -> NotebookParameters:
    """Checked parameters of ``notebook``, a page of a profile's run: ``given`` maps each name the
    page was given to its value."""
    if notebook not in PROFILE_PAGES:
        raise ParameterError(f"unknown notebook {notebook!r}; notebooks: {', '.join(PROFILE_PAGES)}")
    given = declared(notebook, given)
    name = given.get("profile")
    if not isinstance(name, str) or not name:
        raise _fail("profile", "a profile name", name)
    results = _path("results_dir", given.get("results_dir") or f"results/{name}", False)
    profile, recorded = recorded_profile(name, results)
    models = _subset("models", given.get("models"), profile.models)
    conditions = _subset("conditions", given.get("conditions"), profile.conditions_for(notebook))
    extra = {key: given.get(key) for key in page_parameters(notebook)}
    return NotebookParameters(
        notebook, profile, models, conditions, results, _path("data_dir", given.get("data_dir"), True), recorded, extra
    )


@dataclass(frozen=True)
class DataParameters:
    """The your-data page's parameters, checked: the user's files and the references, stored on
    ``model`` with ``template`` and ``max_length`` in ``results_dir``, ``n_samples`` of each (None:
    all); the bootstrap's ``seed`` and ``n_resamples``."""

    data_files: tuple[str, ...]
    model: str
    template: str
    n_samples: int | None
    results_dir: Path
    reference_conditions: tuple[str, ...] | None = None  # None: the profiles' reference conditions
    max_length: int = MAX_LENGTH
    seed: int = 0
    n_resamples: int = 1000


def validate_data(given: dict | None = None) -> DataParameters:
    """Checked parameters of the your-data page (``YOUR_DATA``), which no profile's run makes."""
    values = declared(YOUR_DATA, given)
    files = values["data_files"]
    files = [files] if isinstance(files, str) else files
    if not isinstance(files, (list, tuple)) or not files or not all(isinstance(f, str) for f in files):
        raise wrong_kind("data_files", "one or more data file paths", values["data_files"])
    n_samples = positive_int("n_samples", values["n_samples"], allow_none=True)
    references = values["reference_conditions"]
    if references is not None:
        if not isinstance(references, (list, tuple)) or not references:
            raise wrong_kind("reference_conditions", "a list of condition keys or None", references)
        for key in references:
            if key not in data.CONDITIONS:
                raise wrong_kind("reference_conditions", "registered condition keys like aqua/detailed/correct", key)
        references = tuple(references)
    max_length = positive_int("max_length", values["max_length"] or MAX_LENGTH)
    n_resamples = positive_int("n_resamples", values["n_resamples"])
    seed = integer("seed", values["seed"])
    results = _path("results_dir", values["results_dir"], False)
    model = values["model"]
    return DataParameters(
        tuple(files),
        model,
        resolve_template(model, values["template"]),
        n_samples,
        results,
        references,
        max_length=max_length,
        seed=seed,
        n_resamples=n_resamples,
    )
