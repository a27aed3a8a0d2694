"""Run profiles: which models, conditions and sample counts one run of the study covers.

``quick`` is a smoke run (minutes, for tests and first looks), ``cpu`` the default study on the
two offline models, ``decompose`` the conditions of the cpu profile whose token energy splits F1's
and F3's gaps (chapter "Where the gap comes from"), with it, ``paper`` the paper's ten models on a GPU, ``original`` the paper's ten models
on the original study's released statistics (imported, not computed); ``training`` and
``training-paper`` fine-tune a model (``analysis.train``) and execute only the chapter that
``_toc.yml`` keeps to their source. The conditions of every profile
and of every notebook family are derived from ``analysis.data``, never listed by hand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from analysis import data
from analysis.core import chapters, registry, vocabulary
from analysis.core.errors import StudyError
from analysis.core.settings import MAX_LENGTH, TRAINING_ARMS, ExtractionSettings, TrainingSettings


def pages(root=None, source: str | None = None) -> tuple[str, ...]:
    """The notebooks a profile's book executes, in book order: the chapters of ``_toc.yml`` that no
    command of their own makes and that are not kept to the profiles of one source (``source``: the
    chapters kept to the profiles of that source instead)."""
    found = chapters.project_chapters() if root is None else chapters.chapters(root)
    return tuple(c.name for c in found if c.standalone is None and c.source == source)


# The book's chapters (analysis.core.chapters reads them from _toc.yml), by what they read.
CHAPTERS = chapters.project_chapters()
NOTEBOOKS = pages()  # a profile's pages, in book order
FAMILY_NOTEBOOKS = tuple(c.name for c in CHAPTERS if c.family)  # each reads its own family's conditions
# The profile sources that execute chapters of their own (meta ``source`` in _toc.yml), e.g. training.
OWN_CHAPTER_SOURCES = tuple(dict.fromkeys(c.source for c in CHAPTERS if c.source is not None))
# The reference datasets of the your-data page: their None, Simplified and Detailed CoT files.
REFERENCE_DATASETS = ("aqua", "gsm8k")

# Samples per condition of the cpu profiles: 5 is the fewest for which the book gives a verdict
# (bootstrap.MIN_VERDICT_SAMPLES). Five samples of all 86 conditions on both offline models took
# the longest of the 2-core CPU's runs (profile cpu-full); the default cpu profile spends its
# time on the conditions that decide a verdict (``deciding_conditions``; book/gap_methods.md, "The
# default profile"). The samples are a seeded random sample of each file
# (sample_draws.dataset_sample_ids).
CPU_SAMPLES = 5
PAPER_SAMPLES = 500
# Draws of scored tokens per sample of the scored-subset conditions (ExtractionSettings.scored_subsets),
# chosen by the interval width per minute of the split's two steps that read them (book/gap_methods.md,
# "F1's gap in four steps"): on Gemma 3 270M, gsm8k, the pick of its 1-3 tokens held 94% of a step's
# per-instruction variance, and each draw after the first cost 0.68 of the first's time. A run's
# variance x time is least at K = 9 to 13 (the other conditions costing 4 to 8 first draws per
# instruction) and within 6% of that at K = 8, which cpu-full takes; decide, held to 90 minutes,
# takes 4 (86% to 91% of the gain); cpu keeps 1, so that the default book takes no longer than it
# did, and quick, a smoke run that decides nothing, keeps 1 too.
SCORED_SUBSETS = 8
DECIDE_SCORED_SUBSETS = 4

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
    # study's released statistics (``python -m analysis import-original``) and nothing is computed;
    # "training": the run fine-tunes each model under ``training`` (``analysis.train``).
    source: str = "extract"
    training: TrainingSettings | None = None

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
            training=TrainingSettings.from_dict(values["training"]) if values.get("training") else None,
        )

    def notebooks(self) -> tuple[str, ...] | None:
        """The notebooks a run of this profile executes: the chapters kept to its source, if it
        has any (``_toc.yml`` meta ``source``), else None (every profile page)."""
        return pages(source=self.source) if self.source in OWN_CHAPTER_SOURCES else None


def family_conditions(family: str) -> tuple[str, ...]:
    """Condition keys of a notebook family, in registry order.

    The three data families take their conditions (with the length-control views of their
    Detailed CoT files, not the answer-scored ones) from ``Condition.family``; pre-trained vs
    instruct compares the two kinds of model on every study file.
    """
    if family == "pretrained_vs_instruct":
        return tuple(c.key for c in data.study_conditions())
    if family not in FAMILY_NOTEBOOKS:
        raise ProfileError(f"unknown notebook family {family!r}; families: {', '.join(FAMILY_NOTEBOOKS)}")
    return tuple(
        c.key
        for c in data.CONDITIONS.values()
        if c.family == family and c.answer is None and c.scored_reference is None
    )


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
    """The study's files followed by every view of them: the length controls, the answer-scored and
    the scored-subset conditions (``data.CONDITIONS``)."""
    study = [c.key for c in data.study_conditions()]
    return tuple(study + [c.key for c in data.CONDITIONS.values() if c.is_view])


def deciding_conditions() -> tuple[str, ...]:
    """The conditions behind the verdicts that a profile without a base/instruct pair can resolve
    at a few samples (the cpu profile).

    For every reasoning dataset: Simplified CoT, Detailed CoT and Detailed CoT cut to the
    Simplified-CoT length, correct responses (F2, L, L2); for those with None CoT also None CoT with
    both response types and irrelevant Detailed CoT (F1, F3), and the answer scored alone after the
    phrase alone and after the Detailed CoT (S's reasoning step, A3) and the Detailed CoT scored on as
    many tokens as that answer, at random or matched in loss to the answer's (the split of F1's gap reads
    these; the loss-matched one shares the forward pass of the answer after the Detailed CoT). Left out, since at a few samples they
    resolve no cell (book/checks.md, "The default profile"): the Wiki files (F5's "nearly the same"
    part needs far more instructions), the irrelevant responses of Simplified CoT and of the cuts,
    Detailed CoT cut to the None-CoT length (a second view only), and the answer after the Simplified
    CoT or after another instruction's Detailed CoT (shown beside S's reasoning step, never deciding: ``decompose``).
    """
    with_none = {c.dataset for c in data.conditions_matching(settings=("none",))}
    reasoning = vocabulary.REASONING_DATASETS + vocabulary.MATH_REASONING
    chosen = [
        *data.conditions_matching(
            datasets=reasoning,
            settings=("simplified", "detailed", "detailed_cut_simplified"),
            responses=(vocabulary.CORRECT,),
            length_control=True,
        ),
        *data.conditions_matching(datasets=with_none, settings=("none",)),
        *data.conditions_matching(datasets=with_none, settings=("detailed",), responses=(vocabulary.IRRELEVANT,)),
        *data.conditions_matching(datasets=with_none, settings=ANSWER_DECIDING, answer_scored=True),
        *data.conditions_matching(datasets=with_none, settings=SCORED_SUBSET + LOSS_MATCHED, scored_subset=True),
    ]
    order = list(data.CONDITIONS)
    return tuple(sorted({c.key for c in chosen}, key=order.index))


# The answer-scored settings that decide S's reasoning step and A3 (the other two are shown beside it).
ANSWER_DECIDING = ("none_answer", "detailed_answer")
SCORED_SUBSET = tuple(vocabulary.SCORED_SUBSET_SETTINGS)  # S's which-tokens and how-many-tokens steps
# which tokens at equal loss: the chain tokens matched in loss to the answer's, in the pass of its text
LOSS_MATCHED = tuple(vocabulary.LOSS_MATCHED_SETTINGS)


def decomposition_conditions(conditions) -> tuple[str, ...]:
    """Of ``conditions``, those whose token energy splits F1's and F3's gaps in the chapter "Where the
    gap comes from": None CoT and Detailed CoT with correct responses and Detailed CoT with irrelevant
    ones, of every reasoning dataset with None CoT."""
    with_none = {c.dataset for c in data.conditions_matching(settings=("none",))}
    pairs = (("none", vocabulary.CORRECT), ("detailed", vocabulary.CORRECT), ("detailed", vocabulary.IRRELEVANT))
    wanted = {f"{d}/{s}/{r}" for d in with_none for s, r in pairs}
    return tuple(c for c in conditions if c in wanted)


def answer_conditions() -> tuple[str, ...]:
    """Every answer-scored condition (the answer after the phrase alone, after the Simplified CoT,
    after the Detailed CoT and after another instruction's Detailed CoT), in registry order."""
    return tuple(c.key for c in data.conditions_matching(answer_scored=True) if c.answer is not None)


# Random-sign passes of the token energy where a profile computes it (methods, "Where a gap comes
# from"): a response of at most this many tokens is exact, a longer one estimated from this many passes.
ENERGY_PASSES = 4


def quick_conditions() -> tuple[str, ...]:
    """A small set that still exercises every notebook and every section of it.

    The first dataset of each reasoning family and Wiki, with both response types, the three CoT
    settings, the shortest and longest Wiki responses, and both length-control views of Detailed
    CoT: cut to the Simplified-CoT length (the main control, against Simplified CoT) and to the
    No-CoT length; the answer-scored views of the two reasoning datasets and the Detailed CoT scored
    on as many tokens as its answer, at random and matched in loss (at the profile's 128 tokens, those
    after a Detailed CoT lose their answer, and so the subsets their count: all are counted as skipped).
    """
    datasets = (vocabulary.MATH_REASONING[0], vocabulary.COMMONSENSE_REASONING[0], "wiki")
    settings = (
        *vocabulary.COT_SETTINGS,
        vocabulary.WIKI_SETTINGS[0],
        vocabulary.WIKI_SETTINGS[2],
        *vocabulary.LENGTH_CONTROL_SETTINGS,
        *vocabulary.ANSWER_SETTINGS,
        *vocabulary.SCORED_SUBSET_SETTINGS,
        *vocabulary.LOSS_MATCHED_SETTINGS,
    )
    chosen = data.conditions_matching(
        datasets=datasets, settings=settings, length_control=True, answer_scored=True, scored_subset=True
    )
    return tuple(c.key for c in chosen)


# The deciding run: every reasoning dataset with None CoT (aqua, gsm8k; strategyqa, ecqa, creak,
# sensemaking), its draw keeping the usable pairs (ecqa has no None-CoT pair whose two answers are
# one text, creak about half).
DECIDE_DATASETS = tuple(
    d for d in vocabulary.REASONING_DATASETS if data.conditions_matching(datasets=(d,), settings=("none",))
)
# 16 instructions: the cpu run's seconds per sample of these conditions (3.1 min per instruction of
# every dataset on both models, 4.3 with K = 4 draws) put 30 instructions at 128 minutes of
# extraction, 16 at 68, which with the install and the notebooks keeps the run within 90 minutes.
# The loss-matched condition, added since, is not counted there: at K = 4 it adds about 2.5 times
# detailed_answer's own time per instruction (a gradient's statistics per draw; Gemma 3 270M,
# benchmarks/loss_matching.json).
DECIDE_SAMPLES = 16
# Instructions a loss screen reads per dataset beyond the draw, at most, for G1's matched pairs
# (``analysis.extract.screen``): run by ``cpu-full``, where G1 and A5, which cannot decide at the
# deciding run's size, are computed.
LOSS_SCREEN = 30
# What the split of F1's gap and F3 read: None and Detailed CoT with both responses, the answer
# scored after the phrase alone and after the Detailed CoT, and the Detailed CoT scored on as many
# tokens as its answer has after it, at random and matched in loss to the answer's.
DECIDE_SETTINGS = ("none", "detailed", *ANSWER_DECIDING, *SCORED_SUBSET, *LOSS_MATCHED)


@dataclass(frozen=True, kw_only=True)
class ResolutionGoals:
    """What a profile is sized to measure, which its reproducibility page measures it against: the
    steps of the split that read the loss-matched condition, each per-dataset interval narrower than
    plus or minus ``step_half_width`` and each model's mean over its datasets narrower than plus or
    minus ``mean_half_width`` (in mean log norm); and the step at equal loss by design inside the
    interval of the step at equal loss by regression in at least ``design_inside`` of the model and
    dataset cells."""

    step_half_width: float
    mean_half_width: float
    design_inside: float


# The deciding run's goals: the new steps measured to within +-0.35 per dataset and +-0.15 per
# model over the six datasets, and the design and the regression agreeing in 10 of 12 cells. (Its
# former goals, 15 of the 16 family steps decided and three cells in four resolved, were not met for a
# reason more instructions do not remove: a family of two datasets that disagree decides no step.)
RESOLUTION_GOALS = {"decide": ResolutionGoals(step_half_width=0.35, mean_half_width=0.15, design_inside=10 / 12)}


def decide_conditions(datasets=DECIDE_DATASETS) -> tuple[str, ...]:
    """The conditions of the deciding run (``DECIDE_SETTINGS`` of ``datasets``), in registry order."""
    chosen = data.conditions_matching(
        datasets=datasets, settings=DECIDE_SETTINGS, answer_scored=True, scored_subset=True
    )
    return tuple(c.key for c in chosen)


def training_conditions(settings: TrainingSettings) -> tuple[str, ...]:
    """The conditions a training profile reads: each arm trained on and each probe setting."""
    settings_ = dict.fromkeys((*settings.arms, *settings.probe_settings))
    return tuple(f"{settings.dataset}/{s}/{settings.responses}" for s in settings_)


# The training profile on the offline instruct model (methods, "During training"): 16 steps of 4
# samples cut at 256 tokens, 5 probe instructions (the fewest for a verdict) of each setting at steps
# 0, 8 and 16, three arms x five seeds (the weight change and the trained probes vary with the seed,
# so a verdict needs five of them). Three arms x two seeds took 7 min 38 s with `make book` on the
# 2-core CPU (two torch threads); five seeds are measured in the README.
TRAINING_CPU = TrainingSettings(
    dataset="aqua",
    arms=TRAINING_ARMS,
    seeds=(0, 1, 2, 3, 4),
    n_probes=5,
    n_train=32,
    steps=16,
    batch_size=4,
    learning_rate=1e-5,
    checkpoints=(0, 8, 16),
)
# The paper's models that full fine-tuning in float32 fits on one GPU of 141 GB (16 bytes per
# weight: the weight, its gradient and AdamW's two moments, before activations; methods).
TRAINING_PAPER_MODELS = ("Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b", "google/gemma-2-2b-it")
TRAINING_PAPER = replace(
    TRAINING_CPU, n_probes=50, n_train=400, steps=200, batch_size=8, checkpoints=(0, 5, 10, 20, 40, 80, 160, 200)
)


# The default study: what the verdicts on the two offline models need, on a laptop CPU.
CPU = Profile(
    name="cpu",
    models=OFFLINE_MODEL_NAMES,
    conditions=deciding_conditions(),
    extraction=ExtractionSettings(n_samples=CPU_SAMPLES, batch_size=1, device="cpu"),
    n_resamples=1000,
    description=f"both offline models, the {len(deciding_conditions())} conditions behind the verdicts it can resolve, "
    f"{CPU_SAMPLES} samples each",
)

PROFILES: dict[str, Profile] = {
    "quick": Profile(
        name="quick",
        models=OFFLINE_MODEL_NAMES,
        conditions=quick_conditions(),
        extraction=ExtractionSettings(
            n_samples=2,
            max_length=128,
            batch_size=1,
            token_budget=1024,
            device="cpu",
            token_energy_passes=ENERGY_PASSES,
            token_energy_conditions=decomposition_conditions(quick_conditions()),
        ),
        n_resamples=200,
        description="smoke run: both offline models, 2 samples of a few conditions, responses cut at 128 tokens "
        "(with the token energy)",
    ),
    "cpu": CPU,
    "cpu-full": replace(
        CPU,
        name="cpu-full",
        conditions=all_conditions(),
        extraction=CPU.extraction.but(loss_screen=LOSS_SCREEN, scored_subsets=SCORED_SUBSETS),
        description=f"both offline models, all {len(all_conditions())} conditions (the study files and every view of them), {CPU_SAMPLES} samples each, "
        f"and a loss screen of up to {LOSS_SCREEN} more instructions per dataset for G1's matched pairs",
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
    "training": Profile(
        name="training",
        models=("smollm2-135m-instruct",),
        conditions=training_conditions(TRAINING_CPU),
        extraction=ExtractionSettings(n_samples=TRAINING_CPU.n_probes, max_length=256, batch_size=1, device="cpu"),
        n_resamples=1000,
        description="the chapter During training: SmolLM2-135M-Instruct fine-tuned on aqua None, Detailed and "
        "Detailed-cut-to-None CoT, 5 seeds, 16 steps, on the CPU",
        source="training",
        training=TRAINING_CPU,
    ),
    "training-paper": Profile(
        name="training-paper",
        models=TRAINING_PAPER_MODELS,
        conditions=training_conditions(TRAINING_PAPER),
        extraction=ExtractionSettings(
            n_samples=TRAINING_PAPER.n_probes, batch_size=8, token_budget=8192, device="auto"
        ),
        n_resamples=1000,
        description="the chapter During training on the paper's 1.5B and 2B models (full fine-tuning in float32), "
        "5 seeds, 200 steps, on a GPU",
        source="training",
        training=TRAINING_PAPER,
    ),
    "decide": Profile(
        name="decide",
        models=OFFLINE_MODEL_NAMES,
        conditions=decide_conditions(),
        extraction=ExtractionSettings(
            n_samples=DECIDE_SAMPLES, batch_size=1, device="cpu", scored_subsets=DECIDE_SCORED_SUBSETS
        ),
        n_resamples=1000,
        description=f"both offline models, {DECIDE_SAMPLES} samples of the {len(decide_conditions())} conditions "
        f"of the split of F1's gap and of F3 on {', '.join(DECIDE_DATASETS)} ({DECIDE_SCORED_SUBSETS} draws of a "
        "scored subset's tokens, at random and matched in loss)",
    ),
    "decompose": Profile(
        name="decompose",
        models=OFFLINE_MODEL_NAMES,
        conditions=(*decomposition_conditions(deciding_conditions()), *answer_conditions()),
        extraction=ExtractionSettings(
            n_samples=CPU_SAMPLES,
            batch_size=1,
            device="cpu",
            token_energy_passes=ENERGY_PASSES,
            token_energy_conditions=decomposition_conditions(deciding_conditions()),
        ),
        n_resamples=1000,
        description=f"both offline models, the {len(decomposition_conditions(deciding_conditions()))} conditions "
        f"whose token energy splits F1's and F3's gaps, with the token energy ({ENERGY_PASSES} passes), and the "
        f"{len(answer_conditions())} answer-scored conditions (the contexts shown beside S's reasoning step among them), "
        f"{CPU_SAMPLES} samples each (the cpu profile's)",
    ),
}


def get_profile(name: str) -> Profile:
    """The named profile, or a ProfileError listing the names."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; profiles: {', '.join(PROFILES)}") from None
