"""How samples are extracted: one object from the command line or a profile to the runner, the
Ray workers and the your-data run, with one default for each setting."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

MAX_LENGTH = 1024  # this project's default, the paper's: prompt and response cut at this many tokens
# The original study's --max_length in every run it released: rows imported from its files are
# labelled with it whatever this project's default is.
ORIGINAL_MAX_LENGTH = 1024
TOKEN_BUDGET = 2048  # at most this many tokens in one batch (padding included)
SHARD_SIZE = 32  # samples between two writes to the store (and per Ray shard)


@dataclass(frozen=True)
class ExtractionSettings:
    """The settings of one extraction; every stage reads them from here, under these names.

    ``n_samples``: N samples of each condition, a seeded random sample of its records, the same
    indices for every file of a dataset (``data.sample_ids``; None: all). ``template``: "base" or
    "instruct" (None: the model registry's). ``batch_size``: samples per forward pass (None: 1 on
    a CPU, 8 on a GPU, fitted to the free memory there). ``device``: auto, cpu or cuda[:N].
    ``threads``: torch CPU threads (None: the cores free when a run starts, ``extract.threads``); on Ray,
    the CPUs of each worker.
    ``entry_stats``: also the mean, max and min of the gradient entries. ``keep_spectra``: also
    every gradient's singular values (local executor only). ``retry_out_of_memory``: compute
    again the samples recorded as skipped for lack of memory (e.g. on a larger GPU).
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
