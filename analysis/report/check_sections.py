"""Each check's own section, rendered from what the check declares (``findings.scopes.Section``): a
lead-in, a paragraph per model with one clause per answered cell, the notes it names, the table of
its parts and a closing line. The loop is over the registry: a check with a section is shown on its
chapters without a line here, and no function here knows which check it renders.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.checks import SUMMARY_CHAPTERS, Check, selected
from analysis.core import vocabulary
from analysis.findings.rules import DISAGREE, Finding
from analysis.findings.scopes import Section
from analysis.report import cells, voice
from analysis.report.blocks import Blocks, Markdown, Table, fold

TABLE_TITLE = "The numbers per dataset"


def _section(check: Check) -> Section:
    if check.section is None:
        raise ValueError(f"check {check.id} declares no section")
    return check.section


def clause(finding: Finding, check: Check) -> str:
    """One answered cell in words: the check's own clause, else "scope: size (id **verdict**: what the
    verdict says in the check's words)" with the size of the part the cell prints, or "scope: id
    **not applicable** (why)"."""
    scope = vocabulary.scope_label(finding.scope)
    if finding.not_applicable is not None:
        return f"{scope}: {check.id} **{finding.verdict}** ({voice.explained(finding.not_applicable)})"
    section = _section(check)
    if section.cell is not None:
        return section.cell(finding, voice.sized)
    part = finding.part(check.headline) if check.headline is not None else finding.decided_by()
    size = voice.sized(part) if part is not None and part.estimate is not None else "not computed"
    apart = voice.dataset_sizes(part) if finding.verdict is DISAGREE and part is not None else ""
    size += f" ({apart})" if apart else ""
    words = check.words.of(finding.verdict) if check.words is not None else ""
    return f"{scope}: {size} ({check.id} **{finding.verdict}**" + (f": {words})" if words else ")")


def paragraphs(findings: Sequence[Finding], check: Check) -> list[str]:
    """One paragraph per model: "**model.** lead: clause; clause." over its answered cells (pooled
    where there are any)."""
    section = _section(check)
    mine = [f for f in findings if f.check == check.id]
    out = []
    for model in dict.fromkeys(f.model for f in mine):
        answered = cells.answers([f for f in mine if f.model == model])
        lead = section.lead(answered) if callable(section.lead) else section.lead
        out.append(f"**{model}.** {lead}: " + "; ".join(clause(f, check) for f in answered) + ".")
    return out


def notes(findings: Sequence[Finding], check: Check) -> list[str]:
    """The notes of the kinds the section names, once per model: "id, model: the note."."""
    lines = []
    for kind in _section(check).notes:
        said: dict[tuple[str, str], None] = {}
        for f in findings:
            note = f.note(kind)
            if f.check == check.id and note is not None:
                said[(f.model, note.text)] = None
        lines += [f"{check.id}, {model}: {text}." for model, text in said]
    return lines


def parts_table(findings: Sequence[Finding], check: Check) -> pd.DataFrame:
    """The section's table: its own function's, else one line per model and scope with a column per
    declared part (its size and interval)."""
    section = _section(check)
    mine = [f for f in findings if f.check == check.id]
    if section.table is not None:
        return section.table(mine, voice.sized)
    rows: dict[tuple[str, str], dict] = {}
    for f in mine:
        row = rows.setdefault((f.model, f.scope), {"model": f.model, "scope": vocabulary.scope_label(f.scope)})
        for label, role, facet in section.columns:
            part = f.part(role, facet=facet)
            if part is not None and part.estimate is not None:
                row[label] = voice.sized(part)
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(list(rows.values()))
    return table[[c for c in ("model", "scope", *(label for label, _, _ in section.columns)) if c in table.columns]]


def section_blocks(findings: Sequence[Finding], check: Check) -> Blocks:
    """One check's section: its lead-in and question, its paragraphs and notes, its table (folded)
    and its closing line; where it has no cell, what it says then."""
    section = _section(check)
    intro = section.intro.format(id=check.id)
    out: Blocks = [Markdown(f"**{section.title}** {intro}".strip())]
    mine = [f for f in findings if f.check == check.id]
    if not mine:
        return [*out, Markdown(section.empty.format(id=check.id))] if section.empty else out
    out += [Markdown(text) for text in (*paragraphs(mine, check), *notes(mine, check))]
    if section.columns or section.table is not None:
        out.append(fold(TABLE_TITLE, [Table(parts_table(mine, check), empty="No cell is computed here.")]))
    closing = section.closing(mine) if section.closing is not None else ""
    return out + ([Markdown(closing)] if closing else [])


def check_sections(page) -> Blocks:
    """The section of every check of the page's chapter that declares one, in the registry's order;
    none on the pages that show every check (``SUMMARY_CHAPTERS``: the first page and the summary),
    which say each claim in one sentence instead."""
    if page.chapter in SUMMARY_CHAPTERS:
        return []
    shown = [c for c in selected(page.checks(), page.registry) if c.section is not None]
    return [b for check in shown for b in section_blocks(page.findings([check.id]), check)]
