"""Each check's own section, rendered from its declaration (``report.check_sections``): the paragraph
per model, the notes it names, its table, its closing line, and what it says where it has no cell."""

from dataclasses import replace

from made_findings import finding, part

from analysis import checks
from analysis.checks import a5_context, s_gap_split
from analysis.findings import roles
from analysis.findings.rules import HOLDS, SAME_MARGIN, UNRESOLVED, Note, NoteKind
from analysis.findings.scopes import Section
from analysis.report import check_sections
from analysis.report.blocks import Fold, Markdown


def test_a_section_says_each_answered_cell_with_the_size_its_check_prints():
    s = s_gap_split.CHECK
    found = [
        finding(s.id, HOLDS, parts=(part(0.4, role=roles.REASONING_STEP),), model="a"),
        finding(
            s.id, UNRESOLVED, parts=(part(0.1, role=roles.REASONING_STEP),), model="b", scope="gsm8k", pooled=False
        ),
    ]
    first, second = check_sections.paragraphs(found, s)
    assert first.startswith(f"**a.** {s.section.lead}: math reasoning: x1.49 [") and first.endswith(
        f"({s.id} **holds**: {s.words.holds})."
    )
    assert second.startswith("**b.**") and f"({s.id} **not resolved**: {s.words.unresolved})." in second


def test_a_section_prints_its_notes_its_table_and_a_closing_line():
    declared = replace(
        a5_context.CHECK,
        section=replace(
            a5_context.CHECK.section, notes=(NoteKind.EXTRAPOLATION,), closing=lambda found: f"{len(found)} cells."
        ),
    )
    note = Note(NoteKind.EXTRAPOLATION, "on aqua the line extrapolates", ("aqua",))
    within = part(0.0, role=a5_context.ORDER, side="within", bound=SAME_MARGIN, sd=0.01)
    found = [finding(declared.id, HOLDS, parts=(within,), notes=(note,))]
    shown = check_sections.section_blocks(found, declared)
    texts = [b.text for b in shown if isinstance(b, Markdown)]
    assert texts[0].startswith(f"**{declared.section.title}** {declared.id} asks whether")
    assert f"{declared.id}, m: on aqua the line extrapolates." in texts and texts[-1] == "1 cells."
    (table,) = [b for b in shown if isinstance(b, Fold)]
    assert list(table.blocks[0].table.columns) == ["model", "scope", "own chain / its words shuffled"]


def test_a_section_without_a_cell_says_what_its_check_declares():
    shown = check_sections.section_blocks([], a5_context.CHECK)
    assert shown[-1].text == f"{a5_context.CHECK.id} not computed: this run stores no shuffled chain."


def test_every_check_with_a_section_is_rendered_by_the_loop_over_the_registry():
    with_sections = [c.id for c in checks.REGISTRY if c.section is not None]
    assert set(with_sections) >= {s_gap_split.CHECK.id, a5_context.CHECK.id}
    plain = Section(title="Plain.", lead="The plain check")
    assert plain.cell is None and not plain.columns  # a section may declare only words
