"""F5: Longer knowledge responses do not smooth the layer curves as slow thinking does."""

from __future__ import annotations

from analysis.core.vocabulary import WIKI_DATASET
from analysis.findings import check_parts as cp
from analysis.findings import roles, simulated_samples
from analysis.findings.battery import DECIDING, MATH, MODEL, Fixture
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import SUMMARY_CHAPTERS, Inputs, WikiCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign, wiggle

_MARGIN = SAME_MARGIN_PERCENT

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
    parts=cp.f5_parts,
    chapters=(*SUMMARY_CHAPTERS, "wiki_knowledge"),
    calibrated_by=(rule.SHARE, rule.SAME),
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


BATTERY = Fixture(
    verdicts=DECIDING,
    needs="Wiki files of 100 and 1000 words and reasoning curves",
    truth=lambda: _inputs(wiki=(0.3, 0.3), reasoning=(0.3, 0.05)),
    falsity=lambda: _inputs(wiki=(0.3, 0.03), reasoning=(0.3, 0.2)),
    missing=lambda: _inputs(wiki=(0.3, 0.3), reasoning=(0.3, 0.05), with_wiki=False),
)
