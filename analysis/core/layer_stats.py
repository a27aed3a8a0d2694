"""The per-layer statistics of the study, each declared once.

One :class:`Statistic` per column of the results store that holds a number per (sample, layer,
projection): its name, how the book labels it, what it is computed from, which field of the
original study's released files holds it, and which pages read it. The extraction
(``analysis.extract.spectra`` computes each from its function of the same name), the importer of
the original files (``analysis.extract.original_import``), the runner's resume logic (a stored sample
counts as done only if its rows hold every column the run computes), the pages
(``analysis.report.load``) and the your-data page read this table. A new statistic is one entry
here plus its function in ``analysis.extract.spectra``. Torch-free, so that the pages can read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# What a statistic is computed from (``analysis.extract.spectra`` keeps one function per statistic).
SPECTRUM = "singular values"  # f(descending singular values (..., k)) -> (...)
ENTRIES = "entries"  # f(dense gradients (L, m, n)) -> (L,); only with ExtractionSettings.entry_stats
FACTORS = "factors"  # f(each projection's factors, the sample's other statistics) -> (L, 4)
SAMPLE = "sample"  # one number per sample (loss, token counts), set by the runner
# extra backward passes, one per token or random-sign pass (analysis.extract.token_energy); only
# with ExtractionSettings.token_energy_passes
ENERGY = "token passes"
# the draw of a loss-matched condition's chain tokens (analysis.extract.loss_matching), one value per
# sample and draw; only in the rows of the loss-matched conditions
MATCHED = "loss-matched draw"
SOURCES = (SPECTRUM, ENTRIES, FACTORS, SAMPLE, ENERGY, MATCHED)


@dataclass(frozen=True)
class Statistic:
    """One column of numbers of the results store, declared once."""

    name: str  # the results store's column (and the name of its function in analysis.extract.spectra)
    label: str  # how the book names it
    source: str  # one of SOURCES
    original: str | None = None  # the field of the original study's files that holds it (None: they do not)
    # computed from the columns the original files hold, when no field holds it (None: absent from imports)
    from_original: Callable | None = None
    pages: bool = True  # the book's pages read it (False: left on disk, see analysis.report.load)
    your_data: bool = False  # the your-data page compares your files with the references by it

    @property
    def imported(self) -> bool:
        """Whether rows imported from the original study's files hold it."""
        return self.original is not None or self.from_original is not None


def _sigma1_ratio(rows):
    """s1 / nuclear norm of imported rows (missing where the nuclear norm is zero)."""
    return (rows["sigma_max"] / rows["nuclear_norm"]).where(rows["nuclear_norm"] > 0)


# In the store's column order.
TABLE: tuple[Statistic, ...] = (
    Statistic("nuclear_norm", "nuclear norm", SPECTRUM, original="S_sum", your_data=True),
    Statistic("sigma_max", "largest singular value", SPECTRUM, original="S_max"),
    Statistic("sigma_min", "smallest singular value", SPECTRUM, original="S_min"),
    Statistic("sigma1_ratio", "s1 / nuclear norm", SPECTRUM, from_original=_sigma1_ratio),
    Statistic("frobenius", "Frobenius norm", SPECTRUM, original="frobenius_norm"),
    Statistic("effective_rank", "effective rank", SPECTRUM, your_data=True),
    Statistic("entry_mean", "mean gradient entry", ENTRIES, original="M_mean", pages=False),
    Statistic("entry_max", "largest gradient entry", ENTRIES, original="M_max", pages=False),
    Statistic("entry_min", "smallest gradient entry", ENTRIES, original="M_min", pages=False),
    Statistic("cos_same_layer", "cosine similarity within a layer", FACTORS, pages=False, your_data=True),
    Statistic("cos_next_layer", "cosine similarity with the next layer", FACTORS, pages=False, your_data=True),
    Statistic("token_energy", "token energy (sum of squared token-gradient norms)", ENERGY),
    Statistic("token_energy_variance", "variance of the token energy's estimate (0: exact)", ENERGY),
    Statistic("token_energy_exact", "token energy exact (1) or estimated (0)", ENERGY),
    Statistic("loss", "loss", SAMPLE, original="loss"),
    # the scored tokens' losses beyond their mean (G1's and A3's covariates): the largest, their
    # standard deviation, and the mean of log(1 - exp(-loss)), the log of the probability the model
    # gives to the other tokens (a single token's gradient scales with 1 - p)
    Statistic("loss_max", "largest token loss", SAMPLE, pages=False),
    Statistic("loss_sd", "standard deviation of the token losses", SAMPLE, pages=False),
    Statistic("log_miss", "mean log(1 - p) of the scored tokens", SAMPLE, pages=False),
    Statistic("n_tokens", "tokens", SAMPLE),
    Statistic("n_response_tokens", "response tokens", SAMPLE),
    # of a loss-matched draw: how many of its chain tokens lie outside the caliper of their answer
    # token's loss (the nearest taken), and their mean position in the chain (0 its first token, 1 its last)
    Statistic("matched_flagged", "matched tokens outside the loss caliper", MATCHED, pages=False),
    Statistic("matched_position", "mean position of the matched tokens in the chain", MATCHED, pages=False),
)


def of_source(*sources: str) -> tuple[Statistic, ...]:
    """The declared statistics computed from one of ``sources``, in table order."""
    return tuple(s for s in TABLE if s.source in sources)


def names(statistics=None) -> tuple[str, ...]:
    """The column names of ``statistics`` (None: the whole table)."""
    return tuple(s.name for s in (TABLE if statistics is None else statistics))


def labels() -> dict[str, str]:
    """Column name -> how the book names it."""
    return {s.name: s.label for s in TABLE}


def computed_columns(*, entry_stats: bool, token_energy: bool = False, matched: bool = False) -> tuple[str, ...]:
    """The columns an extraction computes for every sample (entry statistics and token energy only
    when asked for, the loss-matched draw's only for a loss-matched condition)."""
    sources = (
        SPECTRUM,
        FACTORS,
        SAMPLE,
        *((ENTRIES,) if entry_stats else ()),
        *((ENERGY,) if token_energy else ()),
        *((MATCHED,) if matched else ()),
    )
    return names(of_source(*sources))


def per_layer_original() -> tuple[Statistic, ...]:
    """The per-(layer, projection) statistics that the original study's files hold, in table order."""
    return tuple(s for s in TABLE if s.original is not None and s.source != SAMPLE)


def absent_from_original() -> tuple[str, ...]:
    """The columns that rows imported from the original study's files leave missing."""
    return tuple(s.name for s in TABLE if not s.imported)


def unread_by_pages() -> tuple[str, ...]:
    """The columns that the book's pages leave on disk."""
    return tuple(s.name for s in TABLE if not s.pages)


def your_data_statistics() -> tuple[str, ...]:
    """The statistics by which the your-data page compares your files with the references."""
    return tuple(s.name for s in TABLE if s.your_data)
