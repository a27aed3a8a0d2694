"""Fast over slow thinking's gap (None over Detailed CoT, the two ends of a chain) under the paper's
per-sequence mean loss and under a per-token sum (as in DAPO or Dr. GRPO-style training, or any
batch-token mean over responses of mixed lengths), which weights a sample by its response token count
R: the gap in log nuclear norm plus log R.
"""

from __future__ import annotations

import pandas as pd

from analysis.core import vocabulary
from analysis.core.formatting import per_model
from analysis.findings import averaging, roles
from analysis.findings.bootstrap import CurveDraws, Estimate, pooled
from analysis.findings.pooling import reasoning_datasets
from analysis.findings.rules import Part, Unit
from analysis.report import voice
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.report.page import Page

FAST, SLOW = vocabulary.COT_SETTINGS[0], vocabulary.COT_SETTINGS[-1]  # None and Detailed CoT


def sum_gap(cd: CurveDraws, dataset: str) -> tuple[Estimate, Estimate] | None:
    """The gap in mean log nuclear norm (None less Detailed CoT, correct responses) under the
    per-sequence mean loss and under a per-token sum (each sample's log nuclear norm plus log R),
    paired; None where the store lacks the token counts."""
    none, detailed = (averaging.log_terms(cd, cd.condition_key(dataset, s)) for s in (FAST, SLOW))
    if none is None or detailed is None or averaging.LOG_NUCLEAR not in none.terms:
        return None
    terms = (none, detailed)
    weights = [cd.resampling.weights(dataset, t.ids) for t in terms]

    def gap(per_sample) -> Estimate:
        a, b = (per_sample(t).mean(axis=1) for t in terms)
        return averaging.paired_contrast(a, weights[0], b, weights_b=weights[1], dataset=dataset)

    mean = gap(lambda t: t.terms[averaging.LOG_NUCLEAR])
    total = gap(lambda t: t.terms[averaging.LOG_NUCLEAR] - 2 * t.terms[averaging.AVERAGING])  # + log R
    return mean, total


def gap_table(page: Page) -> pd.DataFrame:
    """Per model and scope (each dataset, and each family pooled over its datasets): None over
    Detailed CoT's geometric mean nuclear norm under each loss convention, with intervals."""
    rows = []
    for model, cd in page.draws.items():
        by_family: dict[str, list[tuple[Estimate, Estimate]]] = {}
        for dataset in reasoning_datasets(cd):
            gaps = sum_gap(cd, dataset)
            if gaps is not None:
                by_family.setdefault(vocabulary.family_of(dataset), []).append(gaps)
                rows.append(_convention_row(model, dataset, *gaps))
        for family, members in by_family.items():
            means, totals = pooled([g[0] for g in members]), pooled([g[1] for g in members])
            if len(members) >= 2 and means is not None and totals is not None:
                rows.append(_convention_row(model, family, means, totals))
    return pd.DataFrame(rows)


def _convention_row(model: str, scope: str, mean: Estimate, total: Estimate) -> dict:
    def shown(estimate: Estimate) -> str:
        return voice.sized(
            Part(name="", estimate=estimate, side="above", bound=0.0, unit=Unit.RATIO, role=roles.F1_GAP, decides=True)
        )

    return {
        "model": model,
        "scope": vocabulary.scope_label(scope),
        "None / Detailed, mean loss (the paper's)": shown(mean),
        "None / Detailed, token-sum loss": shown(total),
        "_mean": mean.value,
        "_sum": total.value,
    }


def section(page: Page) -> Blocks:
    """The table of the gap under both conventions and one sentence per model saying which way it
    points under each."""
    table = gap_table(page)
    if table.empty:
        return [
            Markdown("The store holds no token counts R of None and Detailed CoT: the token-sum gap is not computed.")
        ]

    def say(model: str, group: pd.DataFrame) -> str:
        family = group[group["scope"].isin(vocabulary.FAMILY_LABELS.values())]
        shown = family if not family.empty else group
        mean_larger = int((shown["_mean"] > 0).sum())
        sum_larger = int((shown["_sum"] > 0).sum())
        return (
            f"Under the paper's mean loss None CoT's gradient is the larger in {mean_larger} of {len(shown)} "
            f"{'families' if not family.empty else 'datasets'}; under a token-sum loss in {sum_larger} of {len(shown)}."
        )

    return [
        Markdown(per_model(table, say)),
        fold("The numbers per dataset and family", [Table(table.drop(columns=["_mean", "_sum"]))]),
    ]
