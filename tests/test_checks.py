"""The check registry: every check declared once, and a check declared there (and nowhere else)
is run, shown on its chapter with a verdict in the matrix, and calibrated."""

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from blocks_read import figures_of, text_of, walk
from synthetic import BASE, INSTRUCT, MODELS, make_results, reasoning_conditions, record_run, write_store

from analysis import checks
from analysis.core import vocabulary
from analysis.core.errors import StudyError
from analysis.findings import battery, calibration, quantities, roles
from analysis.findings.bootstrap import Estimate, all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import DECIDED, NOT_APPLICABLE, Finding, NoteKind, Part, Unit
from analysis.findings.simulated_samples import Condition
from analysis.report import figures, reproduction, sections, verdicts
from analysis.report.blocks import Html
from analysis.report.page import Page

ROOT = Path(__file__).resolve().parents[1]


def toy_parts(context: DatasetContext):
    """Simplified over Detailed CoT (geometric mean of nuclear norms, all layers) > 1."""
    gap = quantities.log_gap(context.curves, context.dataset, "simplified", "detailed", segment="all")
    return (
        None
        if gap is None
        else [
            Part(
                name="Simplified / Detailed",
                estimate=gap,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.LENGTH_GAP,
                decides=True,
            )
        ]
    )


def _toy_inputs(*, simplified: float, settings=("simplified", "detailed")) -> checks.Inputs:
    """The toy's own simulated inputs: Simplified CoT ``simplified`` above Detailed CoT in log norm."""
    levels = {"simplified": simplified, "detailed": 0.0}
    return battery.model_inputs({f"{s}/correct": Condition(curve=levels[s]) for s in settings})


# A check declared in a registry built for the tests only (``checks.REGISTRY`` stays as it is), with
# everything it shows and its battery fixture declared on it: nothing in analysis/report names it.
TOY = checks.PerModelCheck(
    id="T9",
    plain="Simplified CoT gives larger gradients than Detailed CoT",
    claim="Simplified CoT gives larger nuclear norms than Detailed CoT",
    parts=toy_parts,
    chapters=("math_reasoning",),
    calibrated_by=(rule.GAP,),
    lead=4,
    figure=checks.PartFigure(roles.LENGTH_GAP, "Simplified / Detailed", "Toy: the gap", "No gap."),
    section=checks.Section(
        title="The toy's own section.",
        intro="{id} asks whether a shorter chain gives a larger gradient.",
        lead="Simplified over Detailed CoT",
        columns=(("Simplified / Detailed", roles.LENGTH_GAP, None),),
    ),
    battery=battery.Fixture(
        verdicts=battery.DECIDING,
        needs="Simplified and Detailed CoT",
        truth=lambda: _toy_inputs(simplified=1.0),
        falsity=lambda: _toy_inputs(simplified=-1.0),
        missing=lambda: _toy_inputs(simplified=1.0, settings=("detailed",)),
    ),
)


def _curve(model, dataset, setting, responses, proj, layers):
    return {"none": 3.0, "simplified": 2.0, "detailed": 1.0}[setting] * (1 + 0.02 * np.sin(1.7 * layers))


def _math_page(tmp_path, study_data_dir, registry=checks.REGISTRY):
    conditions = [c for d in ("aqua", "gsm8k") for c in reasoning_conditions(d)]
    rows = make_results(conditions, MODELS, n_samples=6, curve=_curve, sample_sd=0.1, seed=5)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    return Page.open("math_reasoning", given, stats=("nuclear_norm",), registry=registry)


def test_a_check_declared_in_a_registry_is_run_shown_and_calibrated(tmp_path, study_data_dir):
    study = checks.REGISTRY
    registry = checks.extended(study, TOY)
    assert checks.REGISTRY is study and "T9" not in checks.all_ids()  # no global registry changed
    page = _math_page(tmp_path, study_data_dir, registry)
    assert "T9" in page.checks() and "T9" not in checks.on_chapter("summary", registry=registry)
    assert "T9" not in _math_page(tmp_path / "study", study_data_dir).checks()
    found = page.findings()
    toy = [f for f in found if f.check == "T9"]
    assert {f.model for f in toy} == set(MODELS) and any(f.pooled for f in toy)
    assert {f.verdict for f in toy} <= set(DECIDED) and checks.claim(toy[0].check, registry) == TOY.claim
    matrix = figures.verdict_svg(found, registry=registry)
    assert re.search(r'aria-label="Verdict matrix of [^"]*\bT9\b', matrix)  # a row of the matrix
    # the chapter's sections show it: its claim, its row in the matrix's paragraphs, its figure
    shown = [*sections.claims(page), *sections.answers(page)]
    text = text_of(shown)
    assert f"**T9**: {TOY.plain} (rule: {TOY.claim})." in text and "**T9** " in text
    assert "Toy: the gap" in [b.alt for b in figures_of(shown)]
    assert any(isinstance(b, Html) and "T9" in b.html for b in walk(shown))  # the matrix the chapter shows
    assert (
        "T9" in calibration.checks_by_rule(registry)[rule.GAP]
        and "T9" not in calibration.checks_by_rule(checks.REGISTRY)[rule.GAP]
    )
    table = calibration.false_holds_table(n=5, reps=2, n_resamples=20, seed=0, registry=registry)
    assert "T9" in table.loc[table["rule"] == "gap", "checks"].iloc[0]
    # its own section on its chapter, from its declaration: lead-in, question, paragraph, table
    said = text_of(sections.answers(page))
    assert "**The toy's own section.** T9 asks whether a shorter chain gives a larger gradient." in said
    assert "Simplified over Detailed CoT: math reasoning: " in said and "(T9 **" in said
    # its first-page lead group, from its declaration
    assert ("T9",) in reproduction.lead_groups(("F1", "S", "T9"), registry)


def test_a_check_s_own_battery_fixture_runs_it_as_the_battery_runs_every_check():
    """The battery reads a check's fixture from the check itself: the toy holds on its truth, does not
    hold on its falsity and gives no cell without Detailed CoT, as every registered check must."""
    from test_battery import holds_on_truth, not_held_on_falsity

    holds_on_truth(TOY)
    not_held_on_falsity(TOY)
    assert TOY.run(TOY.battery.inputs(battery.Case.MISSING)) == []


def test_a_parts_function_reads_one_context_per_dataset_with_every_input():
    """What a per-model check reads beside the curves comes as one ``DatasetContext`` per dataset, so a
    new input is one more field of it, not a keyword threaded through every parts function."""
    rows = make_results(
        [c for d in ("aqua", "gsm8k") for c in reasoning_conditions(d)], {BASE: MODELS[BASE]}, n_samples=4
    )
    draws = all_curve_draws(rows, [BASE], ("nuclear_norm",), n_resamples=20)
    seen: list[DatasetContext] = []
    check = dataclasses.replace(TOY, parts=lambda context: seen.append(context))
    inputs = checks.Inputs(draws, identical={"aqua": frozenset({1})}, data_dir="/the/data", extra={checks.STORE: "s"})
    assert check.run(inputs) == []
    assert {c.dataset: (c.identical, c.data_dir, c.store) for c in seen} == {
        "aqua": (frozenset({1}), "/the/data", "s"),
        "gsm8k": (frozenset(), "/the/data", "s"),
    }
    assert all(c.curves is draws[BASE] for c in seen)


def test_the_registry_declares_each_check_once_with_a_known_scope_and_rule():
    ids = checks.all_ids()
    assert (
        isinstance(checks.REGISTRY, tuple) and len(set(ids)) == len(ids) and ids[:5] == ("F1", "F2", "F3", "F4", "F5")
    )
    assert set(checks.LENGTH_CHECKS) <= set(ids)
    scopes = (checks.PerModelCheck, checks.PairCheck, checks.WikiCheck, checks.TrainingRunCheck)
    for check in checks.REGISTRY:
        assert isinstance(check, scopes) and check.claim and check.chapters, check.id
        assert set(check.calibrated_by) <= set(calibration.RULES), check.id
    with pytest.raises(dataclasses.FrozenInstanceError):
        checks.REGISTRY[0].claim = "changed"
    with pytest.raises(StudyError, match="declared twice"):
        checks.extended(checks.REGISTRY, checks.REGISTRY[0])
    with pytest.raises(StudyError, match="unknown check 'F9'"):
        checks.get("F9")
    with pytest.raises(TypeError):  # built with keyword arguments only
        checks.PerModelCheck("F9", "a claim", toy_parts, ("summary",), ("gap",))
    with pytest.raises(TypeError):  # a check has a scope: the base class is abstract
        checks.Check(id="F9", plain="a claim", claim="a claim", chapters=(), calibrated_by=())
    assert checks.get("L").figure.part is roles.SHARE


def test_the_methods_page_states_every_registered_claim():
    """The claims on the checks page are the registry's (``verdicts.claims_markdown``): each check's plain
    words under its anchor, its estimand and rule folded under them; and each check has its paragraph
    on the methods pages."""
    methods = "".join(
        (ROOT / "book" / f"{page}.md").read_text() for page in ("methods", "checks", "gap_methods", "training_methods")
    )
    assert [verdicts.anchor(c) for c in ("F1", "L2", "A3")] == ["check-f1", "check-l2", "check-a3"]
    for check in checks.REGISTRY:
        entry = verdicts.claims_markdown((check,))
        assert entry.startswith(f"({verdicts.anchor(check.id)})=\n**{check.id}** ({check.scope}): {check.plain}.")
        assert f"<summary>Estimand and rule</summary>\n\n{check.claim}." in entry
    for check in checks.REGISTRY:
        assert re.search(rf"\*\*{check.id}[: ]", methods) or f"**L and {check.id}" in methods, check.id


def _check_literal() -> re.Pattern:
    """A quoted id of a check of the registry ("F1", 'A3', "T3", ...) in a line of code."""
    ids = sorted(checks.all_ids(), key=len, reverse=True)
    return re.compile("[\"'](?:" + "|".join(map(re.escape, ids)) + ")[\"']")


def test_notebooks_name_no_check():
    """Which checks a chapter shows is declared in the registry, never in a notebook: no notebook's
    code (its prose, the comment lines, may name them) quotes the id of a check of the registry."""
    literal = _check_literal()
    assert all(literal.search(f'page.checks(("{i}",))') for i in checks.all_ids())
    assert not literal.search('"F10", "A", "T", "L3"')  # an id only, not a longer or shorter name
    notebooks = sorted((ROOT / "notebooks").glob("*.py"))
    assert notebooks
    for notebook in notebooks:
        code = [line for line in notebook.read_text().splitlines() if not line.lstrip().startswith("#")]
        named = [line for line in code if literal.search(line)]
        assert not named, (notebook.name, named)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerToyRunCheck(checks.Check):
    """A scope the study does not have: one finding per toy run of ``inputs.extra["runs"]``."""

    scope: ClassVar[str] = "per toy run"
    parts: Callable[[np.ndarray], list[Part]]

    def run(self, inputs):
        runs = inputs.extra["runs"].items()
        return [Finding(self.id, run, run, False, tuple(self.parts(values))) for run, values in runs]


def test_a_check_of_a_new_scope_runs_through_the_same_engine_and_table():
    """A scope the study does not have yet is one subclass of ``Check`` (as ``TrainingRunCheck``
    is); its check is declared like any other and its findings land in the same table."""

    def parts(values):
        draws = np.asarray(values)
        return [
            Part(
                name="loss drop",
                estimate=Estimate(float(draws.mean()), draws, (("run", 10),)),
                side="above",
                bound=0.0,
                role=roles.SIMULATED,
                decides=True,
            )
        ]

    toy = PerToyRunCheck(
        id="X1",
        plain="Training lowers the loss",
        claim="The mean loss drop over a run is above 0",
        parts=parts,
        chapters=("summary",),
        calibrated_by=(),
    )
    registry = checks.extended(checks.REGISTRY, toy)
    runs = {"runs": {"run-a": np.linspace(0.5, 1.5, 400)}}
    found = checks.run_checks({}, ("X1",), extra=runs, registry=registry)
    assert [f.check for f in found] == ["X1"] and found[0].verdict == "holds"
    table = verdicts.findings_frame(found)
    assert list(table["check"]) == ["X1"] and table["verdict"].iloc[0] == "holds"
    assert checks.claim(found[0].check, registry) == toy.claim and toy.scope in verdicts.claims_markdown(registry)
    assert checks.run_checks({}, ("X1",), extra=runs) == []  # the study's registry has no X1
    with pytest.raises(StudyError, match="not a check of a scope"):
        checks.extended(registry, parts)


def _picture(model, dataset, setting, responses, proj, layers):
    """None CoT large and bumpy, Detailed CoT small and smooth, the cut Detailed responses between
    them (the length share is computed), irrelevant Detailed responses larger; on the instruct model
    Simplified CoT below Detailed CoT (the length checks do not apply there)."""
    levels = {"none": 3.0, "simplified": 2.0, "detailed": 1.0, "detailed_cut_none": 1.6, "detailed_cut_simplified": 1.4}
    level = 0.5 if (model, setting) == (INSTRUCT, "simplified") else levels.get(setting, 1.0)
    curve = level * (1 + (0.3 if setting in ("none", "len100") else 0.05) * np.sin(1.7 * layers) ** 2)
    return 1.5 * curve if responses == "irrelevant" and setting.startswith("detailed") else curve


def _relabelled(parts):
    """The check's parts function with every part's display name and group renamed."""

    def renamed(*args, **kwargs):
        found = parts(*args, **kwargs)
        if not isinstance(found, list):
            return found
        return [dataclasses.replace(p, name=f"renamed {p.name}", group=p.group and f"renamed {p.group}") for p in found]

    return renamed


def _outcome(finding):
    """What a finding decides, without any label: its verdict and each part's role, value and say
    (and whether it is marked as of the opposite sign to the part it accompanies)."""
    parts = tuple(
        (p.role, p.decides, p.opposite, None if p.estimate is None else p.estimate.value) for p in finding.parts
    )
    return finding.check, finding.model, finding.scope, finding.verdict, parts


def test_parts_are_found_by_their_role_never_by_their_display_label():
    """Renaming every part of every check leaves every verdict, part and number as it was: the
    length share, the length checks' gate, F2's choice of its deciding parts and the mark of the
    paper's quantity where its sign differs find their parts by ``rules.Role`` (the data here
    exercise each of them)."""
    settings = ("none", "simplified", "detailed", "detailed_cut_none", "detailed_cut_simplified")
    conditions = [c for d in ("aqua", "gsm8k") for c in reasoning_conditions(d, settings=settings)]
    conditions += reasoning_conditions(vocabulary.WIKI_DATASET, settings=vocabulary.WIKI_SETTINGS)
    rows = make_results(conditions, MODELS, n_samples=12, curve=_picture, sample_sd=0.1, seed=7)
    none = (rows["setting"] == "none") & (rows["model"] == BASE)  # None's log-scale spread grows with depth
    spread = np.linspace(0.1, 1.5, 18)[rows.loc[none, "layer"].to_numpy()]
    z = np.random.default_rng(7).standard_normal(12)[rows.loc[none, "sample_index"].to_numpy()]
    rows.loc[none, "nuclear_norm"] *= np.exp(spread * z)
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm",), n_resamples=200)
    relabelled = tuple(dataclasses.replace(c, parts=_relabelled(c.parts)) for c in checks.REGISTRY)
    plain, renamed = (
        checks.run_checks(draws, pairs={INSTRUCT: BASE}, registry=r) for r in (checks.REGISTRY, relabelled)
    )
    assert [_outcome(f) for f in renamed] == [_outcome(f) for f in plain]
    assert all(p.name.startswith("renamed ") for f in renamed if not f.pooled for p in f.parts)
    assert any(p.role is roles.SHARE and p.estimate is not None for f in plain for p in f.parts)
    assert any(f.check in checks.LENGTH_CHECKS and f.verdict == NOT_APPLICABLE for f in plain)
    notes = [f.note(NoteKind.DECIDED_OTHERWISE) for f in plain if f.check == "F2"]
    assert any(n is not None and "log-scale spread changes" in n.text for n in notes)
    assert any(p.opposite for f in plain for p in f.parts)


def test_the_methods_page_states_whom_a_sampling_profile_draws_from(study_data_dir):
    """The answers of the instructions a sampling profile draws from, computed from the data files."""
    from analysis.findings import population

    text = population.population_text(study_data_dir)
    assert 'CREAK 251 of its 500 instructions ("yes" 116 of 253, "no" 135 of 247)' in text
    methods = " ".join((ROOT / "book" / "methods.md").read_text().split())
    assert " ".join(text.split()) in methods


def test_every_check_says_its_claim_in_plain_words_and_names_a_headline_part_its_cells_have():
    for check in checks.REGISTRY:
        assert 0 < len(check.plain.split()) <= 20, check.id
    conditions = [c for d in ("aqua", "gsm8k") for c in reasoning_conditions(d)]
    rows = make_results(conditions, MODELS, n_samples=6, curve=_curve, noise=0.02, sample_sd=0.1, seed=3)
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm",), n_resamples=50)
    found = checks.run_checks(draws, ("F1", "F2", "F3"))
    for check in ("F1", "F2", "F3"):
        role = checks.get(check).headline
        mine = [f for f in found if f.check == check]
        assert mine and all(f.part(role) is not None for f in mine), check


def test_a_part_refuses_a_side_that_is_none_of_the_three():
    from analysis.findings.rules import SIDES

    assert SIDES == ("above", "below", "within")
    with pytest.raises(ValueError, match="side 'abvoe' is none of above, below, within"):
        Part(name="x", estimate=None, side="abvoe", bound=0.0, role=roles.F1_GAP, decides=True)  # type: ignore[arg-type]


def test_a_check_id_is_one_the_registry_holds():
    assert checks.check_id("A5") == "A5" and all(checks.check_id(i) == i for i in checks.all_ids())
    with pytest.raises(StudyError, match="unknown check 'F9'; checks: F1, F2"):
        checks.check_id("F9")
    with pytest.raises(StudyError, match="unknown check 'F1'"):
        checks.check_id("F1", checks.registry_of([checks.get("A5")]))
