"""F5: Longer knowledge responses do not smooth the layer curves as slow thinking does."""

from __future__ import annotations

import numpy as np

from analysis.core import vocabulary
from analysis.core.vocabulary import WIKI_DATASET
from analysis.findings import roles, simulated_samples
from analysis.findings.battery import DECIDING, MATH, MODEL, Fixture
from analysis.findings.bootstrap import CurveDraws, combine, pooled
from analysis.findings.calibration import rule
from analysis.findings.check_parts import nearly_same, share_contrast
from analysis.findings.quantities import (
    log_mad_ratio,
    log_rd,
    log_rd_mean_square,
    mean_roughness,
)
from analysis.findings.rules import SAME_MARGIN, SAME_MARGIN_PERCENT, CheckId, Part, Unit, above_zero
from analysis.findings.scopes import SUMMARY_CHAPTERS, Inputs, WikiCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign, wiggle

_MARGIN = SAME_MARGIN_PERCENT

F5_SHARES = "share of roughness kept: Wiki 1000 / 100 words - reasoning Detailed / Simplified"
# "Nearly the same" Wiki curves (``check_parts.nearly_same``)
WIKI_SAME = "Wiki root-mean-square per-layer irrelevant / correct"


def f5_parts(cd: CurveDraws, reference: CurveDraws | None = None) -> list[Part] | None:
    """F5: the share of its roughness a curve keeps from Wiki 100 to 1000 words minus the share it
    keeps from Simplified to Detailed CoT (pooled over the reasoning datasets) > 0, computed only
    where both shorter curves' roughness is established (a curve already smooth at 100 words has
    no roughness to lose, and is not counted as "not smoothed"); the Wiki curves nearly the same
    (``nearly_same``), their signed mean ratio and the paper's Wiki MAD ratio shown beside."""
    wiki = vocabulary.WIKI_DATASET
    short, long = mean_roughness(cd, wiki, "len100"), mean_roughness(cd, wiki, "len1000")
    if short is None or long is None:
        return None
    ref = reference if reference is not None else cd
    pairs = [
        (a, b)
        for dataset in ref.datasets()
        if dataset != wiki
        and (a := mean_roughness(ref, dataset, "simplified")) is not None
        and (b := mean_roughness(ref, dataset, "detailed")) is not None
    ]
    simplified, detailed = pooled([a for a, _ in pairs]), pooled([b for _, b in pairs])
    contrast = None if simplified is None or detailed is None else share_contrast(short, long, simplified, detailed)
    rds = [r for s in vocabulary.WIKI_SETTINGS if (r := log_rd(cd, wiki, s)) is not None]
    wiki_rd = combine(lambda *r: np.mean(np.stack(r), axis=0), *rds) if rds else None
    squares = [r for s in vocabulary.WIKI_SETTINGS if (r := log_rd_mean_square(cd, wiki, s)) is not None]
    wiki_square = combine(lambda *r: np.mean(np.stack(r), axis=0), *squares) if squares else None
    wiki_mad = log_mad_ratio(cd, wiki, "len1000", "len100")
    return [
        above_zero(F5_SHARES, contrast, role=roles.SHARES, decides=True),
        above_zero("Wiki 100 words roughness", short, role=roles.WIKI_ROUGHNESS, decides=False),
        above_zero("reasoning Simplified CoT roughness", simplified, role=roles.REASONING_ROUGHNESS, decides=False),
        nearly_same(WIKI_SAME, wiki_square, role=roles.WIKI_SAME),
        Part(
            name="Wiki irrelevant / correct",
            estimate=wiki_rd,
            side="within",
            bound=SAME_MARGIN,
            unit=Unit.RATIO,
            role=roles.WIKI_RD,
            decides=False,
        ),
        above_zero("paper's Wiki MAD 1000 / 100 words", wiki_mad, unit=Unit.RATIO, role=roles.WIKI_MAD, decides=False),
    ]


CHECK = WikiCheck(
    id=CheckId("F5"),
    paper=True,
    says=(
        (roles.SHARES, "Wiki keeps more of its roughness"),
        (roles.WIKI_SAME, "Wiki correct and irrelevant nearly the same"),
    ),
    words=Words(
        holds="longer Wiki responses do not smooth the curves as slow thinking does",
        fails="longer Wiki responses smooth the curves as much as slow thinking, or their correct and irrelevant curves differ",
        unresolved="these instructions do not decide how much longer Wiki responses smooth the curves",
    ),
    plain="Longer knowledge responses do not smooth the layer curves as slow thinking does",
    headline=roles.SHARES,
    claim=(
        "Longer Wiki responses do not smooth the curves as much as slow thinking does (Detailed vs Simplified "
        "CoT: the share of its noise-corrected roughness a curve keeps from 100 to 1000 Wiki words exceeds the "
        "share it keeps from Simplified to Detailed CoT, where both shorter curves' roughness is established), "
        f"and correct vs irrelevant Wiki curves are nearly the same (the root-mean-square over layers of the "
        f"per-layer log ratio within {_MARGIN})"
    ),
    parts=f5_parts,
    chapters=(*SUMMARY_CHAPTERS, "wiki_knowledge"),
    calibrated_by=(rule.SHARE, rule.SAME),
    battery=Fixture(
        verdicts=DECIDING,
        needs="Wiki files of 100 and 1000 words and reasoning curves",
        truth=lambda: _inputs(wiki=(0.3, 0.3), reasoning=(0.3, 0.05)),
        falsity=lambda: _inputs(wiki=(0.3, 0.03), reasoning=(0.3, 0.2)),
        missing=lambda: _inputs(wiki=(0.3, 0.3), reasoning=(0.3, 0.05), with_wiki=False),
    ),
)


def _inputs(*, wiki: tuple[float, float], reasoning: tuple[float, float], with_wiki: bool = True) -> Inputs:
    """Wiki curves of 100 and 1000 words stepping by ``wiki`` from layer to layer (correct and
    irrelevant alike), reasoning curves of Simplified and Detailed CoT by ``reasoning``."""
    conditions = {
        f"{d}/{s}/correct": Condition(curve=wiggle(0.0, size))
        for d in MATH
        for s, size in zip(("simplified", "detailed"), reasoning)
    }
    if with_wiki:
        conditions |= {
            f"{WIKI_DATASET}/{s}/{r}": Condition(curve=wiggle(0.0, size))
            for s, size in zip(("len100", "len1000"), wiki)
            for r in ("correct", "irrelevant")
        }
    return Inputs(simulated_samples.draws({MODEL: conditions}, design=SampleDesign(sample_sd=0.05)))
