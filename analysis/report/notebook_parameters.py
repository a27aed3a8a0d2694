"""Checking a notebook's parameters before it reads anything.

papermill injects parameters as plain Python values and only warns about names a notebook does
not declare, so each notebook's first code cell after its ``parameters`` cell passes them here:
a wrong type or value stops the notebook with one line naming the parameter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from analysis import data, profiles, registry

DEFAULT_PROFILE = "cpu"


class ParameterError(ValueError):
    """A notebook parameter with a wrong type or value."""


@dataclass(frozen=True)
class NotebookParameters:
    """A notebook's parameters, checked and with defaults filled in."""

    notebook: str
    models: tuple[str, ...]
    conditions: tuple[str, ...]
    n_samples: int | None
    max_length: int
    results_dir: Path
    data_dir: Path | None
    seed: int
    n_resamples: int


def _fail(name: str, expected: str, value) -> ParameterError:
    return ParameterError(f"notebook parameter {name}: expected {expected}, got {value!r} ({type(value).__name__})")


def _integer(name: str, value, minimum: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    expected = f"an integer >= {minimum}" + (" or None" if allow_none else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, expected, value)
    if value < minimum:
        raise _fail(name, expected, value)
    return int(value)


def _names(name: str, value, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise _fail(name, "a non-empty list of names (or one name, or None for the default)", value)
    if len(set(value)) != len(value):
        raise ParameterError(f"notebook parameter {name}: repeated entries in {list(value)!r}")
    return tuple(value)


def _check_models(names: tuple[str, ...]) -> None:
    for name in names:
        if registry.known_model(name) is None and not Path(name).is_dir():
            known = ", ".join([*registry.OFFLINE_MODELS, *registry.PAPER_MODELS])
            raise ParameterError(
                f"notebook parameter models: unknown model {name!r} (not a registered model nor a "
                f"local folder); registered: {known}"
            )


def _check_conditions(notebook: str, names: tuple[str, ...]) -> None:
    allowed = set(profiles.family_conditions(notebook)) if notebook in profiles.FAMILY_NOTEBOOKS else set(data.REGISTRY)
    for name in names:
        try:
            data.get_condition(name)
        except data.DataError as error:
            raise ParameterError(f"notebook parameter conditions: {error}") from None
        if name not in allowed:
            raise ParameterError(
                f"notebook parameter conditions: {name!r} is not a condition of the {notebook} notebook "
                f"(its conditions come from analysis.profiles.family_conditions({notebook!r}))"
            )


def _path(name: str, value, allow_none: bool) -> Path | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise _fail(name, "a directory path" + (" or None" if allow_none else ""), value)
    return Path(value)


def optional_path(name: str, value) -> Path | None:
    """A path parameter that may be None (e.g. a file that a page shows when it exists)."""
    return _path(name, value, True)


def validate(
    notebook: str,
    *,
    models=None,
    conditions=None,
    n_samples=None,
    max_length=1024,
    results_dir=None,
    data_dir=None,
    seed=0,
    n_resamples=1000,
) -> NotebookParameters:
    """Checked parameters of ``notebook``; None for models/conditions/results_dir means the default
    profile's (``cpu``): its models, its conditions for this notebook, and ``results/cpu``."""
    if notebook not in profiles.NOTEBOOKS:
        raise ParameterError(f"unknown notebook {notebook!r}; notebooks: {', '.join(profiles.NOTEBOOKS)}")
    default = profiles.get_profile(DEFAULT_PROFILE)
    chosen_models = _names("models", models, default.models)
    _check_models(chosen_models)
    chosen_conditions = _names("conditions", conditions, default.conditions_for(notebook))
    _check_conditions(notebook, chosen_conditions)
    results = _path("results_dir", results_dir if results_dir is not None else f"results/{DEFAULT_PROFILE}", False)
    return NotebookParameters(
        notebook=notebook,
        models=chosen_models,
        conditions=chosen_conditions,
        n_samples=_integer("n_samples", n_samples, 1, allow_none=True),
        max_length=_integer("max_length", max_length, 1),
        results_dir=results,
        data_dir=_path("data_dir", data_dir, True),
        seed=_integer("seed", seed, 0),
        n_resamples=_integer("n_resamples", n_resamples, 10),
    )
