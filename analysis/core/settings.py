"""How samples are extracted: one object from the command line or a profile to the runner, the
Ray workers and the your-data run, with one default for each setting."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from analysis.core.errors import StudyError

MAX_LENGTH = 1024  # this project's default, the paper's: prompt and response cut at this many tokens
# The original study's --max_length in every run it released: rows imported from its files are
# labelled with it whatever this project's default is.
ORIGINAL_MAX_LENGTH = 1024
TOKEN_BUDGET = 2048  # at most this many tokens in one batch (padding included)
SHARD_SIZE = 32  # samples between two writes to the store (and per Ray shard)
# G1 at matched loss (methods, "Beyond the loss"): a pair of one instruction's correct and irrelevant
# responses is matched where their two mean token losses lie within this many nats, and a dataset
# needs this many matched pairs for the statistic on them to decide (7: 2^7 sign flips, 64 distinct
# statistics, can reach a p-value under 2.5%; 5 pairs' 16 cannot); the loss screen
# (``ExtractionSettings.loss_screen``) stops once a dataset has them.
LOSS_CALIPER = 0.25
MATCHED_PAIRS = 7


@dataclass(frozen=True)
class ExtractionSettings:
    """The settings of one extraction; every stage reads them from here, under these names.

    ``n_samples``: N samples of each condition, a seeded random sample of its records, the same
    indices for every file of a dataset (``sample_draws.sample_ids``; None: all). ``template``: "base" or
    "instruct" (None: the model registry's). ``batch_size``: samples per forward pass (None: 1 on
    a CPU, 8 on a GPU, fitted to the free memory there). ``device``: auto, cpu or cuda[:N].
    ``threads``: torch CPU threads (None: the cores free when a run starts, ``extract.threads``); on Ray,
    the CPUs of each worker.
    ``entry_stats``: also the mean, max and min of the gradient entries. ``keep_spectra``: also
    every gradient's singular values (local executor only). ``retry_out_of_memory``: compute
    again the samples recorded as skipped for lack of memory (e.g. on a larger GPU).
    ``token_energy_passes``: k > 0 also computes each sample's token energy (the sum of its token
    gradients' squared norms, ``analysis.extract.token_energy``): exactly in R backward passes when
    its R response tokens are at most k, else estimated from k random-sign passes; 0: off.
    ``token_energy_conditions``: the condition keys it is computed for (empty: every condition).
    ``loss_screen``: k > 0 screens up to k instructions per dataset beyond the draw, forward passes
    only, for pairs of Detailed-CoT responses within ``LOSS_CALIPER`` of each other, and computes the
    gradients of those pairs (``analysis.extract.screen``); 0: off.
    ``scored_subsets``: K draws of scored tokens per sample of a scored-subset condition, one
    gradient each through one forward pass, stored with a ``subset`` column under a run key of
    their own (1: the one draw, stored as before; other conditions ignore it).
    """

    n_samples: int | None = None
    max_length: int = MAX_LENGTH
    template: str | None = None
    batch_size: int | None = None
    token_budget: int = TOKEN_BUDGET
    device: str = "auto"
    threads: int | None = None
    shard_size: int = SHARD_SIZE
    entry_stats: bool = False
    keep_spectra: bool = False
    retry_out_of_memory: bool = False
    token_energy_passes: int = 0
    token_energy_conditions: tuple[str, ...] = ()
    loss_screen: int = 0
    scored_subsets: int = 1

    def __post_init__(self) -> None:
        if self.scored_subsets < 1:
            raise StudyError(f"scored_subsets is {self.scored_subsets}: at least 1 draw of scored tokens per sample")
        if self.token_energy_passes < 0 or self.token_energy_passes == 1:
            raise StudyError(
                f"token_energy_passes is {self.token_energy_passes}: 0 (off) or at least 2 "
                "(an estimate's variance needs two passes)"
            )
        if self.loss_screen < 0:
            raise StudyError(f"loss_screen is {self.loss_screen}: 0 (off) or the instructions screened at most")
        object.__setattr__(self, "token_energy_conditions", tuple(self.token_energy_conditions))

    def energy_passes(self, condition: str) -> int:
        """The token energy's passes for one condition key (0: not computed for it)."""
        wanted = not self.token_energy_conditions or condition in self.token_energy_conditions
        return self.token_energy_passes if wanted else 0

    def but(self, **changes) -> ExtractionSettings:
        """These settings with some of them changed (unknown names are a TypeError)."""
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> ExtractionSettings:
        """Settings from a run log's record (names of other versions are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


# The arms of a training run: the condition setting each one trains on. ``detailed_cut_none`` is
# Detailed CoT cut, per instruction, to the token count of that instruction's None-CoT response:
# the same instructions and the same number of response tokens as the None arm, slow-thinking text.
TRAINING_ARMS = ("none", "detailed", "detailed_cut_none")
TRAINING_PROBE_SETTINGS = ("none", "simplified", "detailed")


@dataclass(frozen=True)
class TrainingSettings:
    """The settings of the fine-tuning runs of the chapter "During training".

    ``dataset``/``responses``: the study files trained on and probed. ``arms``: the settings
    trained on (:data:`TRAINING_ARMS`), ``seeds`` one run per arm and seed. ``n_probes``: held-out
    instructions whose None, Simplified and Detailed responses are probed (drawn first, never
    trained on); ``n_train``: the instructions each seed draws to train on (its own, shared by its
    arms). ``steps`` optimiser steps of AdamW (``learning_rate``, ``weight_decay``) on
    ``batch_size`` samples each; ``checkpoints``: the
    steps at which probes and weight changes are computed and the run's state is saved.
    """

    dataset: str = "aqua"
    responses: str = "correct"
    arms: tuple[str, ...] = TRAINING_ARMS
    seeds: tuple[int, ...] = (0, 1)
    n_probes: int = 8
    n_train: int = 64
    steps: int = 40
    batch_size: int = 4
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    checkpoints: tuple[int, ...] = (0, 5, 10, 20, 40)
    probe_settings: tuple[str, ...] = TRAINING_PROBE_SETTINGS

    def but(self, **changes) -> TrainingSettings:
        """These settings with some of them changed (unknown names are a TypeError)."""
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, values: dict) -> TrainingSettings:
        """Settings from a run log's record (names of other versions are ignored)."""
        known = {f.name for f in fields(cls)}
        # A run log's JSON holds the tuples as lists.
        kept: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in known}
        return cls(**kept)
