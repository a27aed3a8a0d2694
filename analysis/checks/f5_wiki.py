"""F5: Longer knowledge responses do not smooth the layer curves as slow thinking does."""

from __future__ import annotations

from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import SUMMARY_CHAPTERS, WikiCheck, Words

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
