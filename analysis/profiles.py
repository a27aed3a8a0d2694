"""Run profiles: which models, conditions and sample counts one run of the study covers.

``quick`` is a smoke run (minutes, for tests and first looks), ``cpu`` the default study on the
two offline models, ``paper`` the paper's ten models on a GPU, ``original`` the paper's ten models
on the original study's released statistics (imported, not computed). The conditions of every profile
and of every notebook family are derived from ``analysis.data``, never listed by hand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from analysis import chapters, data, registry, vocabulary
from analysis.errors import StudyError
from analysis.settings import MAX_LENGTH, ExtractionSettings


def pages(root=chapters.PROJECT_ROOT) -> tuple[str, ...]:
    """The notebooks a profile's book executes, in book order: the chapters of ``_toc.yml`` that no
    command of their own makes."""
    return tuple(c.name for c in chapters.chapters(root) if c.standalone is None)


# The book's chapters (analysis.chapters reads them from _toc.yml), by what they read.
CHAPTERS = chapters.chapters()
NOTEBOOKS = pages()  # a profile's pages, in book order
FAMILY_NOTEBOOKS = tuple(c.name for c in CHAPTERS if c.family)  # each reads its own family's conditions
SUMMARY_NOTEBOOKS = tuple(n for n in NOTEBOOKS if n not in FAMILY_NOTEBOOKS)  # each reads every condition
# Notebooks that take other parameters than a profile's and run by their own command
# (``python -m analysis profile-data``), never as part of a profile's book.
STANDALONE_NOTEBOOKS = tuple(c.name for c in CHAPTERS if c.standalone is not None)
# The reference datasets of the your-data page: their None, Simplified and Detailed CoT files.
REFERENCE_DATASETS = ("aqua", "gsm8k")

# Samples per condition of the cpu profile. On a 2-core CPU (2 threads, max_length 1024) 5 samples
# of all 86 conditions on both offline models took 44 min 37 s to extract (README); 5 is also the
# fewest samples for which the book gives a verdict (bootstrap.MIN_VERDICT_SAMPLES). The samples
# are a seeded random sample of each file (data.sample_ids). At 5 several checks lack power; the
# pages say which and how many instructions would resolve them (rules.instructions_for_power).
CPU_SAMPLES = 5
PAPER_SAMPLES = 500

OFFLINE_MODEL_NAMES = tuple(registry.OFFLINE_MODELS)
PAPER_MODEL_NAMES = tuple(registry.PAPER_MODELS)


class ProfileError(StudyError, ValueError):
    """An unknown profile or notebook family."""


@dataclass(frozen=True)
class Profile:
    """One way of running the whole study: extraction settings plus bootstrap settings."""

    name: str
    models: tuple[str, ...]
    conditions: tuple[str, ...]  # condition keys, e.g. "aqua/detailed/correct"
    extraction: ExtractionSettings  # its n_samples: a seeded random sample of every condition
    n_resamples: int = 1000
    seed: int = 0
    description: str = ""
    # "extract": the run computes what the store lacks; "imported": the store's rows are the original
    # study's released statistics (``python -m analysis import-original``) and nothing is computed.
    source: str = "extract"

    def conditions_for(self, notebook: str) -> tuple[str, ...]:
        """The profile's conditions that a notebook reads (its family's for a family page, else all)."""
        if notebook not in FAMILY_NOTEBOOKS:
            return self.conditions
        wanted = set(family_conditions(notebook))
        return tuple(c for c in self.conditions if c in wanted)

    def as_dict(self) -> dict:
        """The profile's fields as plain JSON-ready values (the extraction settings as a dict)."""
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, values: dict) -> Profile:
        """The profile a run log recorded (``as_dict``'s inverse)."""
        return cls(
            name=values["name"],
            models=tuple(values["models"]),
            conditions=tuple(values["conditions"]),
            extraction=ExtractionSettings.from_dict(values.get("extraction", {})),
            n_resamples=values.get("n_resamples", 1000),
            seed=values.get("seed", 0),
            description=values.get("description", ""),
            source=values.get("source", "extract"),
        )


def family_conditions(family: str) -> tuple[str, ...]:
    """Condition keys of a notebook family, in registry order.

    The three data families take their conditions (with the length-control views of their
    Detailed CoT files) from ``Condition.family``; pre-trained vs instruct compares the two
    kinds of model on every study file.
    """
    if family == "pretrained_vs_instruct":
        return tuple(c.key for c in data.study_conditions())
    if family not in FAMILY_NOTEBOOKS:
        raise ProfileError(f"unknown notebook family {family!r}; families: {', '.join(FAMILY_NOTEBOOKS)}")
    return tuple(c.key for c in data.REGISTRY.values() if c.family == family)


def reference_conditions(datasets=REFERENCE_DATASETS) -> tuple[str, ...]:
    """None, Simplified and Detailed CoT of each dataset, correct and irrelevant responses: the
    reference settings of the your-data page."""
    unknown = [d for d in datasets if d not in vocabulary.REASONING_DATASETS]
    if unknown or not datasets:
        raise ProfileError(
            f"reference dataset {(unknown or [''])[0]!r} has no None/Simplified/Detailed CoT files; "
            f"choose from {', '.join(vocabulary.REASONING_DATASETS)}"
        )
    return tuple(c.key for c in data.conditions_matching(datasets=datasets, settings=vocabulary.COT_SETTINGS))


def all_conditions() -> tuple[str, ...]:
    """The 56 study conditions followed by the 30 length-control conditions."""
    study = [c.key for c in data.study_conditions()]
    derived = [c.key for c in data.REGISTRY.values() if c.length_reference is not None]
    return tuple(study + derived)


def quick_conditions() -> tuple[str, ...]:
    """A small set that still exercises every notebook and every section of it.

    The first dataset of each reasoning family and Wiki, with both response types, the three CoT
    settings, the shortest and longest Wiki responses, and both length-control views of Detailed
    CoT: cut to the Simplified-CoT length (the main control, against Simplified CoT) and to the
    No-CoT length.
    """
    datasets = (vocabulary.MATH_REASONING[0], vocabulary.COMMONSENSE_REASONING[0], "wiki")
    settings = (
        *vocabulary.COT_SETTINGS,
        vocabulary.WIKI_SETTINGS[0],
        vocabulary.WIKI_SETTINGS[2],
        *vocabulary.LENGTH_CONTROL_SETTINGS,
    )
    chosen = data.conditions_matching(datasets=datasets, settings=settings, length_control=True)
    return tuple(c.key for c in chosen)


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        name="quick",
        models=OFFLINE_MODEL_NAMES,
        conditions=quick_conditions(),
        extraction=ExtractionSettings(
            n_samples=2, max_length=128, batch_size=1, token_budget=1024, device="cpu", threads=1
        ),
        n_resamples=200,
        description="smoke run: both offline models, 2 samples of a few conditions, responses cut at 128 tokens",
    ),
    "cpu": Profile(
        name="cpu",
        models=OFFLINE_MODEL_NAMES,
        conditions=all_conditions(),
        extraction=ExtractionSettings(n_samples=CPU_SAMPLES, batch_size=1, device="cpu"),
        n_resamples=1000,
        description=f"both offline models, all 56 study and 30 length-control conditions, {CPU_SAMPLES} samples each",
    ),
    "paper": Profile(
        name="paper",
        models=PAPER_MODEL_NAMES,
        conditions=all_conditions(),
        extraction=ExtractionSettings(n_samples=PAPER_SAMPLES, batch_size=8, token_budget=8192, device="auto"),
        n_resamples=1000,
        description=f"the paper's ten models, all samples (500 per file), max_length {MAX_LENGTH}, on a GPU",
    ),
    "original": Profile(
        name="original",
        models=PAPER_MODEL_NAMES,
        conditions=tuple(c.key for c in data.study_conditions()),
        extraction=ExtractionSettings(n_samples=PAPER_SAMPLES, device="cpu"),  # what the original script ran
        n_resamples=1000,
        description="the paper's ten models on the original study's released statistics (run "
        "`python -m analysis import-original` into the results directory first; nothing is computed), "
        "all 56 study files, no length controls",
        source="imported",
    ),
}


def get_profile(name: str) -> Profile:
    """The named profile, or a ProfileError listing the names."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; profiles: {', '.join(PROFILES)}") from None
