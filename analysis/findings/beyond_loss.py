"""G1: do a sample's layer curves carry information on irrelevant against correct that its token losses lack?

Irrelevant responses have a higher loss, and a sample's gradient grows with its loss; F3's gap may
be the loss seen through the gradient. Per dataset and setting each instruction gives a pair, one
correct and one irrelevant response (None-CoT pairs whose two answers are the same text left out).

- **Differences.** Per pair, irrelevant less correct: of the curve features (log nuclear norm of
  every projection and layer) and of the loss covariates of each response (mean token loss, log R,
  largest token loss, standard deviation of the token losses; where the store lacks the last three,
  the mean token loss only, ``covariates_of``).
- **Partialling.** Inside each training fold the curve differences are regressed by least squares,
  without intercept, on the differences of the covariates and of their squares (a difference of
  f(x) over a pair is linear in these for any quadratic f), fitted on the training pairs only; at
  most one column per ``PAIRS_PER_COLUMN`` training pairs, the mean loss's first, so a fit always
  leaves residuals to learn from. The residuals of all pairs follow.
- **Classifier.** The package's ridge classifier (``classifier.ridge_decisions``, penalty the
  number of features: the former penalty 1 on the mean cross product) is fitted on the training
  pairs' residuals, each pair presented both ways (its residual labelled 1, its negative labelled
  0), and scores the held-out pairs. Folds are grouped by pair (``classifier.grouped_folds``, five,
  ``N_SPLITS`` repeated splits of their own seeds; one split for the AUROCs shown beside). The statistic is the out-of-fold AUROC averaged
  over the splits: above 0.5 when the residual curves tell irrelevant from correct.
- **Decision.** A sign-flip permutation test: flipping a pair's differences (curves and covariates
  together) flips its residual, so one fit per fold scores every flip at once (ridge is linear in
  its targets). Flipping every pair gives the same statistic (the classifier sees each pair both
  ways), so n pairs have 2^(n - 1) distinct flips: up to ``EXACT_PAIRS`` pairs every one of them
  is scored (``every_flip``) and the null is the 2^(n - 1) - 1 flips other than the pairs as they
  are, which makes the one-sided p-value (``bootstrap.Estimate.p_value``) exact; above, ``N_FLIPS``
  random flips of whole pairs give the null. It decides at 2.5%. No interval is computed: no refit inside
  bootstrap resamples. A permutation test of "no information" cannot show the claim false, so G1
  is "holds" or "not resolved", never "does not hold".
- **Pooling.** A family's statistic is the mean of its datasets' AUROCs, as every check pools;
  its null the mean of the datasets' values under ``N_FLIPS`` random flips (the estimates'
  ``draws``; where a dataset's flips are enumerated, each random flip's value is read from them),
  each dataset flipped independently (``bootstrap.pooled``): the randomisation test of the mean. Fisher's or Stouffer's
  combination of per-dataset p-values was not chosen: at five pairs a dataset has 16 distinct
  flips, its p-value at least 1/16, and a combination of such coarse p-values loses what the
  mean of the statistics keeps.
- **Matched loss.** Partialling extrapolates where the two responses' losses do not overlap. So the
  same statistic is also computed on the matched pairs alone, those whose two mean token losses
  lie within ``CALIPER`` nats (caliper matching on the covariate, within each instruction), the
  covariates the caliper did not match (log R, the spread of the token losses) partialled first,
  and it decides in place of the statistic on all pairs wherever every dataset of a cell has at
  least ``MIN_MATCHED`` matched pairs (``matched_decides``: 7, whose 2^7 sign flips can reach a
  p-value under 2.5%, where 5 pairs' 16 distinct statistics cannot); the share of pairs within
  the caliper is shown beside.
- **Not applicable.** Where the covariates alone already separate every pair (every pair's mean
  loss difference of one sign, and the covariates' own out-of-fold AUROC 1) and too few pairs
  match, there is nothing left for the curves to add that this design can identify: "not
  applicable: the loss separates them", with the share of pairs within the caliper (``separated``).

Its false "holds" where the curves depend on the token losses non-linearly, and its power, are
measured by ``calibration.gap_calibration`` (rule ``beyond loss``), through the matched route too.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from analysis.core import vocabulary
from analysis.core.settings import LOSS_CALIPER, MATCHED_PAIRS
from analysis.extract.screens import Screen
from analysis.findings import classifier, roles
from analysis.findings.bootstrap import PROJECTIONS, CurveDraws, Estimate, rows_of
from analysis.findings.rules import NotApplicable, Note, NoteKind, Part, Unit, Why

LOSS, TOKENS, LOSS_MAX, LOSS_SD, NUCLEAR = "loss", "n_response_tokens", "loss_max", "loss_sd", "nuclear_norm"
READS = (LOSS, LOSS_MAX, LOSS_SD, TOKENS)  # the per-sample statistics G1 reads beyond the nuclear norm curves
COVARIATES = {
    LOSS: "mean token loss",
    TOKENS: "log R",
    LOSS_MAX: "largest token loss",
    LOSS_SD: "standard deviation of the token losses",
}
# The covariates' order in the partialling at matched loss: those the caliper did not match first.
MATCHED_ORDER = (TOKENS, LOSS_SD, LOSS_MAX, LOSS)
N_FOLDS = 5
N_SPLITS = 3  # repeated splits into folds of the statistic, seeds 0 .. N_SPLITS - 1 (one for what is shown beside)
N_FLIPS = 200
EXACT_PAIRS = 12  # up to this many pairs every distinct sign flip is scored (2^11 at 12), not random ones
PAIRS_PER_COLUMN = 3  # the partialling fits at most one covariate column per this many training pairs
FLIP_SEED = 0
CALIPER = LOSS_CALIPER  # nats: a pair is matched where its two responses' mean token losses differ by at most this
MIN_MATCHED = MATCHED_PAIRS  # matched pairs every dataset of a cell needs for G1 to decide at matched loss
MATCHED = "matched"  # the facet's second item on the statistic of the matched pairs
SCREENED = "screened"  # the facet's second item on the share of the loss screen's pairs that matched

STATISTIC = "AUROC of the curves beyond the loss"
MATCHED_STATISTIC = f"{STATISTIC}, matched pairs"
P_VALUE = "p (sign flips)"
CURVES_ALONE, LOSS_ALONE, ORDERED = "AUROC of the curves alone", "AUROC of the loss alone", "pairs the loss orders"
SEPARATED = "the loss separates them"
WITHIN_CALIPER = f"pairs within {CALIPER} nats"
SCREENED_WITHIN = f"screened pairs within {CALIPER} nats"
DECIDING = "detailed"  # the setting whose pairs decide; None CoT's are shown beside


@dataclass(frozen=True)
class Pairs:
    """One dataset's pairs under one setting: instruction ids (n,), the curve differences (n, p,
    irrelevant less correct log nuclear norms) and each response's covariates (n, k), named."""

    ids: np.ndarray
    curves: np.ndarray
    correct: np.ndarray
    irrelevant: np.ndarray
    names: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(self.ids.size)

    def basis(self, *, matched: bool = False) -> np.ndarray:
        """(n, 2k) differences of the covariates, then of their squares, the mean loss's first; for
        pairs matched on the mean loss (``matched``), the covariates the caliper did not match first
        (log R, the spread of the token losses, ...), the mean loss last: at a few pairs the fit
        takes only the first columns."""
        order = np.arange(len(self.names))
        if matched:
            order = np.array(sorted(order, key=lambda i: MATCHED_ORDER.index(self.names[i])))
        correct, irrelevant = self.correct[:, order], self.irrelevant[:, order]
        return np.hstack([irrelevant - correct, irrelevant**2 - correct**2])

    def within_caliper(self, caliper: float = CALIPER) -> np.ndarray:
        """(n,) bool: the pairs whose two mean token losses differ by at most ``caliper`` nats."""
        return np.abs(self.irrelevant[:, 0] - self.correct[:, 0]) <= caliper

    def subset(self, keep: np.ndarray) -> Pairs:
        """The pairs where ``keep`` is true."""
        return Pairs(self.ids[keep], self.curves[keep], self.correct[keep], self.irrelevant[keep], self.names)

    def joined(self, other: Pairs) -> Pairs:
        """These pairs, then ``other``'s (the same curve columns and covariates)."""
        return Pairs(
            np.concatenate([self.ids, other.ids]),
            np.vstack([self.curves, other.curves]),
            np.vstack([self.correct, other.correct]),
            np.vstack([self.irrelevant, other.irrelevant]),
            self.names,
        )

    def finite_columns(self) -> np.ndarray:
        """(p,) bool: the curve columns finite in every pair (a zero gradient's log is not)."""
        return np.isfinite(self.curves).all(axis=0)

    def with_columns(self, keep: np.ndarray) -> Pairs:
        """The pairs with the curve columns where ``keep`` is true."""
        return Pairs(self.ids, self.curves[:, keep], self.correct, self.irrelevant, self.names)


def _samples(
    cd: CurveDraws, condition: str, stat: str, *, screened: bool = False
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    keys = [(condition, proj, stat) for proj in PROJECTIONS]
    source = cd.screened if screened else cd.samples
    return [source[k] for k in keys] if all(k in source for k in keys) else None


def _rows(pieces: list[tuple[np.ndarray, np.ndarray]], ids: np.ndarray) -> list[np.ndarray]:
    return [rows_of(matrix, own, ids) for matrix, own in pieces]


def covariates_of(cd: CurveDraws, conditions: Sequence[str]) -> tuple[str, ...]:
    """The covariates stored for every condition: all four, else the mean token loss only."""
    stored = all(_samples(cd, c, s) is not None for c in conditions for s in READS)
    return READS if stored else (LOSS,)


def _per_sample(cd: CurveDraws, condition: str, stat: str, ids: np.ndarray, *, screened: bool = False) -> np.ndarray:
    values = np.nanmax(_rows(_samples(cd, condition, stat, screened=screened)[:1], ids)[0], axis=1)  # type: ignore[index]
    return np.log(np.maximum(values, 1)) if stat == TOKENS else values


def paired(cd: CurveDraws, dataset: str, setting: str, excluded: Iterable[int] = ()) -> Pairs | None:
    """The pairs of instructions with both responses stored (not in ``excluded``), the curve
    columns finite in every pair; None when the nuclear norms or the loss are not stored."""
    pairs = _all_columns(cd, dataset, setting, excluded)
    return pairs.with_columns(pairs.finite_columns()) if pairs is not None and pairs.n else pairs


def screened_pairs(cd: CurveDraws, dataset: str, setting: str, names: tuple[str, ...]) -> Pairs | None:
    """The loss screen's pairs of ``dataset`` (``CurveDraws.screened``), every curve column kept,
    with the covariates ``names``; None where the screen computed none or lacks one of them."""
    conditions = [cd.condition_key(dataset, setting, r) for r in vocabulary.RESPONSES]
    if any(_samples(cd, c, s, screened=True) is None for c in conditions for s in (NUCLEAR, *names)):
        return None
    return _all_columns(cd, dataset, setting, (), names=names, screened=True)


def _all_columns(
    cd: CurveDraws,
    dataset: str,
    setting: str,
    excluded: Iterable[int],
    *,
    names: tuple[str, ...] | None = None,
    screened: bool = False,
) -> Pairs | None:
    conditions = [cd.condition_key(dataset, setting, r) for r in vocabulary.RESPONSES]
    nuclear = [_samples(cd, c, NUCLEAR, screened=screened) for c in conditions]
    if any(v is None for v in nuclear) or any(_samples(cd, c, LOSS, screened=screened) is None for c in conditions):
        return None
    names = names or covariates_of(cd, conditions)
    pieces = [p for c in conditions for s in (NUCLEAR, *names) for p in _samples(cd, c, s, screened=screened)]  # type: ignore[union-attr]
    ids = np.asarray(sorted(set.intersection(*(set(i.tolist()) for _, i in pieces)) - set(excluded)), dtype=int)
    if ids.size == 0:
        return Pairs(ids, np.empty((0, 0)), np.empty((0, len(names))), np.empty((0, len(names))), names)
    logs = []
    for curves in nuclear:
        values = np.concatenate(_rows(curves, ids), axis=1)  # type: ignore[arg-type]
        with np.errstate(divide="ignore", invalid="ignore"):
            logs.append(np.log(values))
    covariates = [np.column_stack([_per_sample(cd, c, s, ids, screened=screened) for s in names]) for c in conditions]
    return Pairs(ids, logs[1] - logs[0], covariates[0], covariates[1], names)


def _residuals(curves: np.ndarray, basis: np.ndarray | None, train: np.ndarray) -> np.ndarray:
    """The curve differences less their least-squares fit on the basis (no intercept), fitted on the
    training pairs, at most one column per ``PAIRS_PER_COLUMN`` of them."""
    if basis is None:
        return curves
    columns = basis[:, : max(1, train.size // PAIRS_PER_COLUMN)]
    coefficients, *_ = np.linalg.lstsq(columns[train], curves[train], rcond=None)
    return curves - columns @ coefficients


@cache
def pair_folds(n: int, seed: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(training pairs, held-out pairs) of each fold of one split of ``n`` pairs, each pair's two
    rows (its residual labelled 1, its negative 0) in one group (``classifier.grouped_folds``,
    ``N_FOLDS`` folds or one pair each): they depend on ``n`` and ``seed`` alone, so are made once."""
    labels, groups = np.repeat([1, 0], n), np.tile(np.arange(n), 2)
    folds = []
    for rows, _ in classifier.grouped_folds(labels, groups, n_folds=min(N_FOLDS, n), seed=seed):
        train = np.unique(groups[rows])
        folds.append((train, np.setdiff1d(np.arange(n), train)))
    return tuple(folds)


def split_aurocs(x: np.ndarray, signs: np.ndarray, basis: np.ndarray | None, seed: int) -> np.ndarray:
    """One split's out-of-fold AUROC for each column of ``signs`` (n, c; +1 or -1 per pair: the
    pairs as they are, or flipped): per fold, ``x`` partialled on ``basis`` (None: as it is) on the
    training pairs, the ridge classifier fitted on them presented both ways, the held-out pairs
    scored both ways."""
    ahead, behind = np.empty(signs.shape), np.empty(signs.shape)  # scores of +residual and -residual
    for train, test in pair_folds(x.shape[0], seed):
        residual = _residuals(x, basis, train)
        both_ways = np.vstack([residual[test], -residual[test]])
        scores = classifier.ridge_decisions(
            np.vstack([residual[train], -residual[train]]),
            np.vstack([signs[train], -signs[train]]),
            both_ways,
            float(x.shape[1]),
        )
        ahead[test], behind[test] = scores[: test.size], scores[test.size :]
    flipped = signs < 0
    return classifier.column_aurocs(np.where(flipped, behind, ahead), np.where(flipped, ahead, behind))


def flips(n: int, dataset: str, setting: str, n_flips: int = N_FLIPS) -> np.ndarray:
    """(n, 1 + n_flips) signs: the pairs as they are, then ``n_flips`` random flips of whole pairs,
    seeded by the dataset and setting (independent between datasets)."""
    rng = np.random.default_rng([FLIP_SEED, zlib.crc32(f"{dataset}/{setting}".encode())])
    return np.hstack([np.ones((n, 1)), rng.choice([-1.0, 1.0], size=(n, n_flips))])


def every_flip(n: int) -> np.ndarray:
    """(n, 2^(n - 1)) signs: every flip of whole pairs that keeps the first pair as it is (flipping
    every pair gives the same statistic), the pairs as they are first; column k flips pair i + 1
    where bit i of k is set."""
    bits = (np.arange(2 ** (n - 1))[None, :] >> np.arange(n - 1)[:, None]) & 1
    return np.vstack([np.ones((1, 2 ** (n - 1))), 1.0 - 2.0 * bits])


def flip_columns(signs: np.ndarray) -> np.ndarray:
    """(c,) the column of ``every_flip`` whose statistic each column of ``signs`` (n, c) has: the
    same flip, or its flip of every pair where it flips the first pair."""
    kept = signs[1:] * signs[:1] < 0
    return (kept * (1 << np.arange(signs.shape[0] - 1))[:, None]).sum(axis=0)


def mean_aurocs(x: np.ndarray, signs: np.ndarray, basis: np.ndarray | None, splits: int = N_SPLITS) -> np.ndarray:
    """``split_aurocs`` averaged over ``splits`` repeated splits (one where every fold holds one
    pair: every split is then the same)."""
    splits = 1 if x.shape[0] <= N_FOLDS else splits
    return np.mean([split_aurocs(x, signs, basis, seed) for seed in range(splits)], axis=0)


def beyond_estimate(
    pairs: Pairs, dataset: str, setting: str, n_flips: int = N_FLIPS, *, matched: bool = False
) -> Estimate:
    """G1's statistic with its sign-flip null (``Estimate.null``): every distinct flip up to
    ``EXACT_PAIRS`` pairs, else the ``n_flips`` random ones; ``draws``: the values under those random
    flips (what a family pools), read from the enumerated flips where there are. ``matched``: on
    pairs matched on the mean loss (``Pairs.basis``)."""
    drawn, basis = flips(pairs.n, dataset, setting, n_flips), pairs.basis(matched=matched)
    strata = ((dataset, pairs.n),)
    if pairs.n > EXACT_PAIRS:
        values = mean_aurocs(pairs.curves, drawn, basis)
        return Estimate(float(values[0]), values[1:], strata, bounded=True, null=values[1:])
    every = mean_aurocs(pairs.curves, every_flip(pairs.n), basis)
    draws = every[flip_columns(drawn[:, 1:])]
    return Estimate(float(every[0]), draws, strata, bounded=True, null=every[1:])


def _shown(value: float, dataset: str, n: int) -> Estimate:
    return Estimate(float(value), np.empty(0), ((dataset, n),), bounded=True)


def p_value_part(statistic: Part) -> Part:
    """The p-value of a statistic's part, shown beside it (the statistic's facet)."""
    estimate = statistic.estimate
    p = Estimate(estimate.p_value(), np.empty(0), estimate.strata) if estimate is not None else None
    return Part(
        name=P_VALUE,
        estimate=p,
        side="below",
        bound=0.025,
        unit=Unit.P_VALUE,
        role=roles.P_VALUE,
        facet=statistic.facet,
        group=statistic.group,
        decides=False,
    )


def dataset_parts(
    pairs: Pairs,
    dataset: str,
    setting: str,
    *,
    decides: bool,
    screened: Pairs | None = None,
    screen: Screen | None = None,
) -> list[Part]:
    """G1's parts of one dataset and setting: the statistic (deciding where ``decides``), its
    p-value, the AUROC of the curves alone and of the covariates alone, and the share of pairs
    whose mean-loss difference has the majority sign; under the deciding setting, the matched
    route's parts (``matched_parts``, with the loss screen's pairs and screen where there is one)."""
    group, facet = vocabulary.setting_label(setting), (setting,)
    estimate = beyond_estimate(pairs, dataset, setting)
    statistic = Part(
        name=STATISTIC,
        estimate=estimate,
        side="above",
        bound=0.5,
        unit=Unit.AUROC,
        role=roles.BEYOND_LOSS,
        facet=facet,
        group=group,
        decides=decides,
    )
    one = np.ones((pairs.n, 1))
    alone = float(mean_aurocs(pairs.curves, one, None, splits=1)[0])
    loss = float(mean_aurocs(pairs.irrelevant - pairs.correct, one, None, splits=1)[0])
    above = float(np.mean(pairs.irrelevant[:, 0] > pairs.correct[:, 0]))
    beside = [
        (CURVES_ALONE, alone, roles.AUROC_CURVES, Unit.AUROC),
        (LOSS_ALONE, loss, roles.AUROC_LOSS, Unit.AUROC),
        (ORDERED, max(above, 1 - above), roles.LOSS_ORDER, Unit.SHARE),
    ]
    parts = [statistic, p_value_part(statistic)]
    for name, value, role, unit in beside:
        shown = _shown(value, dataset, pairs.n)
        parts.append(
            Part(
                name=name,
                estimate=shown,
                side="above",
                bound=0.5,
                unit=unit,
                role=role,
                facet=facet,
                group=group,
                decides=False,
            )
        )
    matched = matched_parts(pairs, dataset, setting, screened=screened, screen=screen) if setting == DECIDING else []
    return parts + matched


def _share(name: str, value: float, *, dataset: str, n: int, facet: tuple[str, ...], group: str) -> Part:
    shown = _shown(value, dataset, n)
    return Part(
        name=name,
        estimate=shown,
        side="above",
        bound=0.0,
        unit=Unit.SHARE,
        role=roles.MATCHED_SHARE,
        facet=facet,
        group=group,
        decides=False,
    )


def matched_parts(
    pairs: Pairs, dataset: str, setting: str, *, screened: Pairs | None = None, screen: Screen | None = None
) -> list[Part]:
    """The share of pairs within the caliper (of the drawn pairs, and of the instructions a loss
    screen read where there is one), and, where at least two pairs match, drawn and screened
    together, the statistic on those pairs alone with its p-value (not deciding;
    ``matched_decides`` makes it decide)."""
    group, keep = vocabulary.setting_label(setting), pairs.within_caliper()
    parts = [_share(WITHIN_CALIPER, float(np.mean(keep)), dataset=dataset, n=pairs.n, facet=(setting,), group=group)]
    close = pairs.subset(keep)
    if screen is not None and screen.screened:
        found = screened.subset(screened.within_caliper()) if screened is not None else None
        n_found = found.n if found is not None else 0
        parts.append(
            _share(
                SCREENED_WITHIN,
                n_found / len(screen.screened),
                dataset=dataset,
                n=len(screen.screened),
                facet=(setting, SCREENED),
                group=group,
            )
        )
        close = close.joined(found) if found is not None and found.n else close
    if close.n >= 2:
        estimate = beyond_estimate(close, dataset, f"{setting} {MATCHED}", matched=True)
        statistic = Part(
            name=MATCHED_STATISTIC,
            estimate=estimate,
            side="above",
            bound=0.5,
            unit=Unit.AUROC,
            role=roles.BEYOND_LOSS,
            facet=(setting, MATCHED),
            group=group,
            decides=False,
        )
        parts += [statistic, p_value_part(statistic)]
    return parts


def matched_decides(parts: Sequence[Part]) -> tuple[list[Part], Note | None]:
    """G1's parts where every dataset of the cell has at least ``MIN_MATCHED`` pairs within the
    caliper: the statistic on the matched pairs decides in place of the one on all pairs, with a
    note; elsewhere the parts unchanged and no note."""
    everyone = _statistic(parts, (DECIDING,))
    close = _statistic(parts, (DECIDING, MATCHED))
    if everyone is None or close is None or everyone.estimate is None or close.estimate is None:
        return list(parts), None
    datasets = {d for d, _ in everyone.estimate.strata}
    matched = dict(close.estimate.strata)
    if set(matched) != datasets or min(matched.values()) < MIN_MATCHED:
        return list(parts), None
    out = [replace(p, decides=p is close) if p is everyone or p is close else p for p in parts]
    return out, Note(
        NoteKind.LOSS_MATCHED,
        f"decided at matched loss: the pairs whose mean token losses lie within {CALIPER} nats ({matched_counts(parts)})",
        tuple(sorted(datasets)),
    )


def matched_counts(parts: Sequence[Part]) -> str:
    """ "aqua 7 of 30, gsm8k under 2 of 30": per dataset, the pairs within the caliper of all pairs
    (the statistic on matched pairs, whose count this reads, needs two of them); where a loss screen
    read more instructions, "aqua 6 of 30 drawn and 41 screened"."""
    everyone, close = _statistic(parts, (DECIDING,)), _statistic(parts, (DECIDING, MATCHED))
    if everyone is None or everyone.estimate is None:
        return ""
    matched = dict(close.estimate.strata) if close is not None and close.estimate is not None else {}
    share = next((p for p in parts if p.role is roles.MATCHED_SHARE and p.facet == (DECIDING, SCREENED)), None)
    screened = dict(share.estimate.strata) if share is not None and share.estimate is not None else {}
    return ", ".join(
        f"{d} {matched.get(d, 'under 2')} of {n}" + (f" drawn and {screened[d]} screened" if d in screened else "")
        for d, n in everyone.estimate.strata
    )


def _statistic(parts: Sequence[Part], facet: tuple[str, ...]) -> Part | None:
    return next((p for p in parts if p.role is roles.BEYOND_LOSS and p.facet == facet), None)


def setting_parts(cd: CurveDraws, dataset: str, setting: str, *, decides: bool, excluded=()) -> list[Part] | None:
    """G1's parts of one setting, with the loss screen's pairs under the deciding setting; None with
    fewer than two pairs or nothing stored. The curve columns are those finite in every pair."""
    pairs = _all_columns(cd, dataset, setting, excluded)
    if pairs is None or pairs.n < 2:
        return None
    screened = screened_pairs(cd, dataset, setting, pairs.names) if setting == DECIDING else None
    screened = screened if screened is not None and screened.n else None
    columns = pairs.finite_columns()
    if screened is not None:
        columns &= screened.finite_columns()
        screened = screened.with_columns(columns)
    if not columns.any():
        return None
    pairs = pairs.with_columns(columns)
    return dataset_parts(pairs, dataset, setting, decides=decides, screened=screened, screen=cd.screens.get(dataset))


def after_pooling(parts: list[Part]) -> list[Part]:
    """A family's p-values, from its pooled statistics' pooled nulls (not the mean of the p-values)."""
    statistics = {p.facet: p for p in parts if p.role is roles.BEYOND_LOSS}
    return [
        p_value_part(statistics[p.facet]) if p.role is roles.P_VALUE and p.facet in statistics else p for p in parts
    ]


def separated(parts: Sequence[Part]) -> NotApplicable | None:
    """ "the loss separates them" where, under the deciding setting, every pair's mean-loss
    difference has one sign and the covariates alone reach an out-of-fold AUROC of 1, and the
    statistic on matched pairs does not decide (None elsewhere)."""
    close = _statistic(parts, (DECIDING, MATCHED))
    if close is not None and close.decides:
        return None
    value = {p.role: p.value for p in parts if p.facet == (DECIDING,) and p.estimate is not None}
    if value.get(roles.LOSS_ORDER, 0.0) >= 1.0 and value.get(roles.AUROC_LOSS, 0.0) >= 1.0:
        return NotApplicable(
            Why.LOSS_SEPARATES,
            SEPARATED,
            "every pair's mean loss is higher for the same response, and the loss alone scores AUROC 1; "
            f"pairs whose two mean token losses lie within {CALIPER} nats: {matched_counts(parts)}, too few for "
            f"a test at matched loss (at least {MIN_MATCHED} in every dataset)",
        )
    return None
