"""Where a gap in log norm comes from: averaging over more tokens, token size, alignment, shape.

A sample's loss is the mean of the cross-entropy of its R response tokens, so its gradient is a
mean of R token gradients: G = (1/R) sum_r g_r. With e = (1/R) sum_r ||g_r||_F^2 (the mean squared
token-gradient norm), kappa = ||sum_r g_r||_F^2 / sum_r ||g_r||_F^2 (their alignment: 1 when they
are orthogonal on average, R when they are identical) and s = ||G||_* / ||G||_F (the spectral
shape), exactly

    log ||G||_* = log s + 1/2 log e + 1/2 log kappa - 1/2 log R.

The Frobenius norm is log ||G||_F = 1/2 log e + 1/2 log kappa - 1/2 log R: averaging's share of
a gap in mean log Frobenius norm is exactly the gap in -1/2 log R, and what is left, the gap in
log(sqrt(R) ||G||_F), is token size and alignment together; it reads the stored columns
``frobenius`` and ``n_response_tokens`` only. The nuclear norm adds the shape s. Where the store holds the token energy E = sum_r ||g_r||_F^2 (``token_energy``,
``ExtractionSettings.token_energy_passes``) for every sample of a condition, the remainder splits
into token size 1/2 log e = 1/2 log(E / R) and alignment 1/2 log kappa = log(sqrt(R) ||G||_F) - 1/2 log e. Each term is a mean over q, k, v, o (and the layers of a segment) of per-sample
logs, so a gap between two conditions is a difference of means over instructions, resampled with
the book's one resampling of the instructions (``bootstrap``), paired like F1's own gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core import vocabulary
from analysis.extract.token_counts import fill_command
from analysis.findings.bootstrap import PROJECTIONS, CurveDraws, Estimate, resampled_mean, rows_of
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import NotApplicable, Why

FROBENIUS, NUCLEAR, TOKENS, ENERGY = "frobenius", "nuclear_norm", "n_response_tokens", "token_energy"
# the statistics the split per layer reads beyond the nuclear norm (token size is split from
# alignment with the energy where it is stored)
READS = (FROBENIUS, TOKENS, ENERGY)

# The terms of a sample's log norms (per layer), each a mean over q, k, v, o:
REST = "token size and alignment"  # log ||G||_F + 1/2 log R = 1/2 log e + 1/2 log kappa
TOKEN_SIZE = "token size"  # 1/2 log e = 1/2 log E - 1/2 log R (with the token energy E only)
ALIGNMENT = "alignment"  # 1/2 log kappa = REST - TOKEN_SIZE (with the token energy E only)
AVERAGING = "averaging"  # -1/2 log R
SHAPE = "shape"  # log ||G||_* - log ||G||_F = log s
LOG_FROBENIUS = "log Frobenius norm"
LOG_NUCLEAR = "log nuclear norm"
SCALED_NUCLEAR = "log nuclear norm + 1/2 log R"  # shape + token size + alignment
TERMS = (REST, TOKEN_SIZE, ALIGNMENT, AVERAGING, SHAPE, LOG_FROBENIUS, LOG_NUCLEAR, SCALED_NUCLEAR)
# The parts of the nuclear-norm gap that add up to it, in the order a stacked figure shows them:
# four with the token energy, three without it.
STACKED = (AVERAGING, REST, SHAPE)
STACKED_WITH_ENERGY = (AVERAGING, TOKEN_SIZE, ALIGNMENT, SHAPE)


def stacked_terms(present) -> tuple[str, ...]:
    """The parts that add up to the nuclear-norm gap among the terms ``present``: four where token
    size and alignment are split, else three."""
    return STACKED_WITH_ENERGY if {TOKEN_SIZE, ALIGNMENT} <= set(present) else STACKED


@dataclass(frozen=True)
class LogTerms:
    """One condition's per-sample terms: ``terms[name]`` (n, L), on its instructions ``ids``."""

    ids: np.ndarray
    terms: dict[str, np.ndarray]


def _per_sample(cd: CurveDraws, condition: str, stat: str) -> list[tuple[np.ndarray, np.ndarray]] | None:
    keys = [(condition, proj, stat) for proj in PROJECTIONS]
    if not all(k in cd.samples for k in keys):
        return None
    return [cd.samples[k] for k in keys]


def token_terms(
    log_frobenius: np.ndarray,
    log_nuclear: np.ndarray | None,
    log_tokens: np.ndarray,
    log_energy: np.ndarray | None = None,
) -> dict:
    """The terms (``TERMS``) from per-sample log norms (n, L) and log token counts (n,); without
    the nuclear norm, only those of the Frobenius norm; without the log token energy (n, L), token
    size and alignment together only."""
    half = 0.5 * np.asarray(log_tokens, dtype=float)[:, None]
    terms = {
        REST: log_frobenius + half,
        AVERAGING: np.broadcast_to(-half, log_frobenius.shape),
        LOG_FROBENIUS: log_frobenius,
    }
    if log_nuclear is not None:
        terms.update({SHAPE: log_nuclear - log_frobenius, LOG_NUCLEAR: log_nuclear, SCALED_NUCLEAR: log_nuclear + half})
    if log_energy is not None:
        size = 0.5 * log_energy - half
        terms.update({TOKEN_SIZE: size, ALIGNMENT: terms[REST] - size})
    return terms


def log_terms(cd: CurveDraws, condition: str) -> LogTerms | None:
    """The terms of a condition's samples that have every projection's Frobenius norm (positive)
    and a token count (and the nuclear norm where stored); None when a column is not stored."""
    frobenius, tokens = _per_sample(cd, condition, FROBENIUS), _per_sample(cd, condition, TOKENS)
    if frobenius is None or tokens is None:
        return None
    nuclear = _per_sample(cd, condition, NUCLEAR)
    pieces = frobenius + tokens + (nuclear or [])
    ids = np.asarray(sorted(set.intersection(*(set(ids.tolist()) for _, ids in pieces))), dtype=int)

    def aligned(matrix: np.ndarray, own: np.ndarray) -> np.ndarray:
        return rows_of(matrix, own, ids)

    def log_mean(pairs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
        """The mean over q, k, v, o of the log of a statistic held for every one of ``ids`` (else None)."""
        if not all(np.isin(ids, own).all() for _, own in pairs):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.stack([np.log(aligned(m, i)) for m, i in pairs]).mean(axis=0)
        return values if np.all(np.isfinite(values)) else None

    log_f = np.stack([np.log(aligned(m, i)) for m, i in frobenius]).mean(axis=0) if ids.size else None
    counts = np.nanmax(aligned(*tokens[0]), axis=1) if ids.size else None
    if log_f is None or counts is None or not np.all(np.isfinite(log_f)) or not np.all(counts > 0):
        return None
    log_n = log_mean(nuclear) if nuclear is not None else None
    energy = _per_sample(cd, condition, ENERGY)
    log_e = _log_energy(energy, ids) if energy is not None else None
    return LogTerms(ids, token_terms(log_f, log_n, np.log(counts), log_e))


def _log_energy(energy: list[tuple[np.ndarray, np.ndarray]], ids: np.ndarray) -> np.ndarray | None:
    """The mean over q, k, v, o of the log token energy of ``ids`` (n, L): None unless every sample
    holds it (the split only where every sample has it); a sample whose energy is 0 or not finite in
    some projection and layer is a row of NaN, left out of token size and alignment
    (``energy_noise`` counts it), not the whole split."""
    if not all(np.isin(ids, own).all() for _, own in energy):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.stack([np.log(rows_of(m, own, ids)) for m, own in energy]).mean(axis=0)
    values[~np.all(np.isfinite(values), axis=1)] = np.nan
    return values


def paired_contrast(
    a: np.ndarray, weights_a: np.ndarray, b: np.ndarray, weights_b: np.ndarray, *, dataset: str
) -> Estimate:
    """Mean of per-sample values ``a`` (n_a,) less that of ``b`` (n_b,), and under each resample's
    counts of their instructions (paired where the instructions are shared)."""
    value = float(a.mean() - b.mean())
    draws = resampled_mean(a[:, None], weights_a)[:, 0] - resampled_mean(b[:, None], weights_b)[:, 0]
    return Estimate(value, draws, ((dataset, int(min(a.size, b.size))),))


def layer_decomposition(first: LogTerms, second: LogTerms) -> dict[str, np.ndarray]:
    """Per layer, the gap of each term present in both (``first`` less ``second``), (L,) each."""
    shared = [t for t in TERMS if t in first.terms and t in second.terms]
    return {t: np.nanmean(first.terms[t], axis=0) - np.nanmean(second.terms[t], axis=0) for t in shared}


TOKENS_UNKNOWN = "token counts unknown"  # the reason of a cell without R


def tokens_unknown(context: DatasetContext) -> NotApplicable | None:
    """Why F1's gap cannot be split into averaging and the rest on a dataset whose None and Detailed
    CoT curves hold Frobenius norms:
    the token counts R are not stored (the original study's files hold none), with the command that
    adds them to the context's store; None where that is not why."""
    cd, dataset, store = context.curves, context.dataset, context.store
    conditions = [cd.condition_key(dataset, s) for s in ("none", "detailed")]
    if any(_per_sample(cd, c, FROBENIUS) is None for c in conditions):
        return None
    if all(_per_sample(cd, c, TOKENS) is not None for c in conditions):
        return None
    return NotApplicable(
        Why.NOT_STORED,
        TOKENS_UNKNOWN,
        "the store holds no response token count R of these samples",
        command=fill_command(store or "<results store>", [cd.model]),
    )


def conditions_of(setting_pair: tuple[str, str], responses_pair: tuple[str, str], dataset: str) -> tuple[str, str]:
    """The two condition keys of a contrast (first, second) of one dataset."""
    return tuple(f"{dataset}/{s}/{r}" for s, r in zip(setting_pair, responses_pair))  # type: ignore[return-value]


F1_CONTRAST = (("none", "detailed"), (vocabulary.CORRECT, vocabulary.CORRECT))
F3_CONTRAST = (("detailed", "detailed"), (vocabulary.IRRELEVANT, vocabulary.CORRECT))
