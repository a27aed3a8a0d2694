"""The check registry: every check declared once, and a check declared there (and nowhere else)
is run, shown on its chapter with a verdict in the matrix, and calibrated."""

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from synthetic import MODELS, make_results, reasoning_conditions, record_run, write_store

from analysis.findings import calibration, check_parts, checks, quantities
from analysis.findings.rules import DECIDED, Part
from analysis.report import figures, sections
from analysis.report.page import Page

ROOT = Path(__file__).resolve().parents[1]


def toy_parts(cd, dataset, **_):
    """Simplified over Detailed CoT (geometric mean of nuclear norms, all layers) > 1."""
    gap = quantities.log_gap(cd, dataset, "simplified", "detailed", "all")
    return None if gap is None else [Part("Simplified / Detailed x", gap, "above", 0.0, math.exp)]


@pytest.fixture
def toy_check():
    """A check declared in the registry only, for the length of one test."""
    toy = checks.Check(
        "T9",
        "Simplified CoT gives larger nuclear norms than Detailed CoT",
        checks.PER_MODEL,
        toy_parts,
        ("math_reasoning",),
        ("gap",),
        figure=checks.PartFigure("Simplified / Detailed x", "Simplified / Detailed", "Toy: the gap", "No gap."),
    )
    checks.register(toy)
    yield toy
    checks.REGISTRY.remove(toy)


def _curve(model, dataset, setting, responses, proj, layers):
    return {"none": 3.0, "simplified": 2.0, "detailed": 1.0}[setting] * (1 + 0.02 * np.sin(1.7 * layers))


def _math_page(tmp_path, study_data_dir):
    conditions = [c for d in ("aqua", "gsm8k") for c in reasoning_conditions(d)]
    rows = make_results(conditions, MODELS, n_samples=6, curve=_curve, sample_sd=0.1, seed=5)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    return Page.open("math_reasoning", given, stats=("nuclear_norm",))


def test_a_check_declared_in_the_registry_is_run_shown_and_calibrated(toy_check, tmp_path, study_data_dir, monkeypatch):
    page = _math_page(tmp_path, study_data_dir)
    assert "T9" in page.checks() and "T9" not in checks.on_chapter("summary")
    found = page.findings_table()
    toy = found[found["check"] == "T9"]
    assert set(toy["model"]) == set(MODELS) and toy["pooled"].any()
    assert set(toy["verdict"]) <= set(DECIDED) and toy["claim"].iloc[0] == toy_check.claim
    matrix = figures.verdict_figure(found)
    assert "T9" in [t.get_text() for t in matrix.axes[0].get_yticklabels()]
    # the chapter's sections show it: its claim, its row in the matrix's paragraphs, its figure
    shown = []
    monkeypatch.setattr(sections, "show_markdown", lambda text: shown.append(text))
    monkeypatch.setattr(sections, "show_figure", lambda fig, alt, empty="": shown.append(alt))
    sections.claims(page)
    sections.answers(page)
    text = "\n".join(shown)
    assert f"**T9**: {toy_check.claim}." in text and "**T9** " in text and "Toy: the gap" in text
    rules = calibration.checks_by_rule()
    assert "T9" in rules["gap"]
    table = calibration.false_holds_table(n=5, reps=2, n_resamples=20, seed=0)
    assert "T9" in table.loc[table["rule"] == "gap", "checks"].iloc[0]


def test_the_registry_declares_each_check_once_with_a_known_scope_and_rule():
    ids = checks.all_ids()
    assert len(set(ids)) == len(ids) and ids[:5] == checks.PAPER_CHECKS
    assert set(checks.LENGTH_CHECKS) <= set(ids)
    for check in checks.REGISTRY:
        assert check.scope in checks.SCOPES and check.claim and check.chapters, check.id
        assert set(check.calibrated_by) <= set(calibration.RULES), check.id
    with pytest.raises(checks.CheckError, match="declared twice"):
        checks.register(checks.REGISTRY[0])
    with pytest.raises(checks.CheckError, match="unknown check 'F9'"):
        checks.get("F9")
    assert checks.get("L").figure.part == check_parts.SHARE_PART


def test_the_methods_page_states_every_registered_claim():
    """The table of claims on the methods pages is the registry's (``checks.methods_table``), and each
    check has its paragraph there."""
    methods = "".join((ROOT / "book" / f"{page}.md").read_text() for page in ("methods", "checks", "training_methods"))
    assert checks.methods_table() in methods
    for check in checks.REGISTRY:
        assert re.search(rf"\*\*{check.id}[: ]", methods) or f"**L and {check.id}" in methods, check.id


def test_notebooks_name_no_check():
    """Which checks a chapter shows is declared in the registry, never in a notebook."""
    literal = re.compile(r"""["'](F\d|L2?)["']""")
    for notebook in (ROOT / "notebooks").glob("*.py"):
        code = [line for line in notebook.read_text().splitlines() if not line.lstrip().startswith("#")]
        assert not [line for line in code if literal.search(line)], notebook.name


def test_a_check_of_a_new_scope_runs_through_the_same_engine_and_table(monkeypatch):
    """A scope the study does not have yet is one runner (as "per training run" is); its check is
    declared like any other and its findings land in the same table."""
    from analysis.findings.bootstrap import Estimate
    from analysis.findings.rules import Finding

    def per_run(check, inputs):
        return [
            Finding(check.id, run, run, False, tuple(check.parts(values)))
            for run, values in inputs.extra["runs"].items()
        ]

    def parts(values):
        draws = np.asarray(values)
        return [Part("loss drop", Estimate(float(draws.mean()), draws, (("run", 10),)), "above", 0.0)]

    monkeypatch.setattr(checks, "SCOPES", dict(checks.SCOPES))
    monkeypatch.setattr(checks, "REGISTRY", list(checks.REGISTRY))
    checks.register_scope("per toy run", per_run)
    checks.register(checks.Check("X1", "Training lowers the loss", "per toy run", parts, ("summary",), ("gap",)))
    found = checks.run_checks({}, ("X1",), extra={"runs": {"run-a": np.linspace(0.5, 1.5, 400)}})
    table = checks.findings_table(found)
    assert list(table["check"]) == ["X1"] and table["verdict"].iloc[0] == "holds"
    assert table["claim"].iloc[0] == "Training lowers the loss"
    with pytest.raises(checks.CheckError, match="unknown scope"):
        checks.register(checks.Check("X2", "x", "per week", parts, (), ()))


def test_the_methods_page_states_whom_a_sampling_profile_draws_from(study_data_dir):
    """The answers of the instructions a sampling profile draws from, computed from the data files."""
    from analysis.findings import population

    text = population.population_text(study_data_dir)
    assert 'CREAK 251 of its 500 instructions ("yes" 116 of 253, "no" 135 of 247)' in text
    methods = " ".join((ROOT / "book" / "methods.md").read_text().split())
    assert " ".join(text.split()) in methods
