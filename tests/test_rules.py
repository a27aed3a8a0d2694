"""Each check F1-F5 and L on synthetic results built for it: true claims hold, false ones do not,
no effect with few samples stays unresolved, and too few samples get no verdict."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from synthetic import (
    BASE,
    INSTRUCT,
    LEVEL,
    MODELS,
    REASONING_WIGGLE,
    cpu_design_findings,
    make_results,
    reasoning_conditions,
)

from analysis import checks
from analysis.checks import f2_rougher, f4_instruct, f5_wiki
from analysis.findings import check_parts, pooling, quantities, roles, rules
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, HOLDS, TOO_FEW, UNRESOLVED, NoteKind, Why
from analysis.report import figures, voice

WIGGLE = {**REASONING_WIGGLE, "len100": 0.3, "len500": 0.3, "len1000": 0.3, "unpopular": 0.3}


def paper_like(model, dataset, setting, responses, proj, layers):
    """The paper's picture: None CoT large (most of all early) and bumpy, Detailed small and smooth,
    irrelevant Detailed responses 1.5 times larger, Wiki curves bumpy at every length."""
    curve = LEVEL[setting] + WIGGLE[setting] * np.sin(1.7 * layers) ** 2
    if setting == "none":
        curve = curve * np.where(layers < 5, 1.6, 1.0)
    if responses == "irrelevant" and setting.startswith("detailed"):
        curve = 1.5 * curve
    return curve


def reversed_paper(model, dataset, setting, responses, proj, layers):
    """Everything the other way round: Detailed CoT large and bumpy, None small and smooth, the cut
    Detailed responses below full Detailed CoT and above Simplified CoT."""
    flipped = {
        "none": "detailed",
        "detailed": "none",
        "simplified": "simplified",
        "detailed_cut_none": "detailed",
        "detailed_cut_simplified": "detailed_cut_simplified",
    }[setting]
    curve = LEVEL[flipped] + WIGGLE[flipped] * np.sin(1.7 * layers) ** 2
    if setting == "simplified":
        curve = 0.5 * curve  # Simplified (1.0) below the cut (1.4), the cut below Detailed (3.0)
    if responses == "irrelevant" and setting == "none":
        curve = 1.5 * curve
    return curve


def flat(model, dataset, setting, responses, proj, layers):
    return 1.0 + 0.05 * layers


SETTINGS = ("none", "simplified", "detailed", "detailed_cut_none", "detailed_cut_simplified")


def _conditions(datasets=("aqua", "gsm8k"), settings=SETTINGS):
    return [c for d in datasets for c in reasoning_conditions(d, settings=settings)]


def _findings(rows, which=None, pairs=None, identical=None, n_resamples=400, declared=None):
    draws = all_curve_draws(rows, list(dict.fromkeys(rows["model"])), ("nuclear_norm",), n_resamples=n_resamples)
    pairs = pairs if pairs is not None else {INSTRUCT: BASE}
    return _in_book_order(checks.run_checks(draws, which, identical=identical, pairs=pairs, declared=declared))


def _in_book_order(found):
    """The findings by check (the registry's order), model, then scope (families first)."""
    order = {c: i for i, c in enumerate(checks.all_ids())}
    return sorted(found, key=lambda f: (order[f.check], f.model, pooling.scope_rank(f.scope)))


def _of(found, check, pooled=None):
    return [f for f in found if f.check == check and (pooled is None or f.pooled == pooled)]


def _verdicts(found, check, pooled=None):
    return {f.verdict for f in _of(found, check, pooled)}


@pytest.fixture(scope="module")
def paper_findings():
    rows = make_results(_conditions(), MODELS, n_samples=12, curve=paper_like, noise=0.02, sample_sd=0.05, seed=1)
    return _findings(rows)


@pytest.mark.parametrize("check", ["F1", "F2", "F3", "L", "L2"])
def test_true_claims_hold(paper_findings, check):
    assert _verdicts(paper_findings, check) == {HOLDS}


def test_every_check_is_reported_per_dataset_and_per_family(paper_findings):
    f1 = [f for f in _of(paper_findings, "F1") if f.model == BASE]
    assert [f.scope for f in f1] == ["math_reasoning", "aqua", "gsm8k"]
    assert [f.pooled for f in f1] == [True, False, False]
    assert [f.n for f in f1] == [24, 12, 12]
    numbers = voice.numbers(f1[0])
    assert "None / Detailed (all layers) " in numbers and "[" in numbers
    assert checks.claim(f1[0].check) == checks.get("F1").claim


@pytest.mark.parametrize("check", ["F1", "F2", "F3"])
def test_false_claims_do_not_hold(check):
    rows = make_results(_conditions(), MODELS, n_samples=12, curve=reversed_paper, noise=0.02, sample_sd=0.05, seed=2)
    assert _verdicts(_findings(rows, (check,)), check) == {FAILS}


@pytest.mark.parametrize("check", ["L", "L2"])
def test_a_reversed_gap_makes_the_length_checks_not_applicable(check):
    """Simplified CoT below Detailed CoT: L and L2 are claims about that gap, so they do not apply
    (with the reason), never "does not hold"; an unresolved gap likewise."""
    rows = make_results(_conditions(), MODELS, n_samples=12, curve=reversed_paper, noise=0.02, sample_sd=0.05, seed=2)
    found = _findings(rows, (check,))
    assert _verdicts(found, check) == {rules.NOT_APPLICABLE}
    assert all(f.not_applicable.why is Why.PRECONDITION for f in found)
    assert all("Simplified vs Detailed gap is reversed here" in f.not_applicable.reason for f in found)
    no_gap = make_results(
        _conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=6, curve=flat, noise=0.3, sample_sd=0.5, seed=4
    )
    found = _findings(no_gap, (check,))
    assert _verdicts(found, check) == {rules.NOT_APPLICABLE}
    assert all("gap is not resolved here" in f.not_applicable.reason for f in found)


@pytest.mark.parametrize(("check", "cut"), [("L", 2.5), ("L2", 0.8)])
def test_the_length_checks_fail_where_the_gap_is_established_and_their_own_part_is_false(check, cut):
    """L: the cut above Simplified CoT (no content beyond length); L2: the cut below full Detailed."""

    def curve(model, dataset, setting, responses, proj, layers):
        level = cut if setting == "detailed_cut_simplified" else LEVEL[setting]
        return level * (1 + WIGGLE[setting] * np.sin(1.7 * layers) ** 2)

    rows = make_results(_conditions(), MODELS, n_samples=12, curve=curve, noise=0.02, sample_sd=0.05, seed=2)
    assert _verdicts(_findings(rows, (check,)), check) == {FAILS}


def test_no_effect_with_few_samples_is_not_resolved():
    rows = make_results(
        _conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=6, curve=flat, noise=0.3, sample_sd=0.5, seed=3
    )
    found = _findings(rows, ("F1", "F2"))
    assert {f.verdict for f in found} == {UNRESOLVED}


def test_the_length_share_is_shown_only_where_the_gap_is_established():
    rows = make_results(_conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=6, curve=flat, sample_sd=0.3, seed=3)
    draws = all_curve_draws(rows, [BASE], ("nuclear_norm",), n_resamples=400)[BASE]
    for parts in (
        check_parts.length_parts(DatasetContext(curves=draws, dataset="aqua")),
        check_parts.length_effect_parts(DatasetContext(curves=draws, dataset="aqua")),
    ):
        gap = next(p for p in parts if p.key == (roles.LENGTH_GAP, (), False))
        assert gap.name == "Simplified / Detailed"
        assert any(p.role is roles.SHARE for p in parts) == gap.supports()
    paper = make_results(_conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=8, curve=paper_like, seed=3)
    draws = all_curve_draws(paper, [BASE], ("nuclear_norm",), n_resamples=400)[BASE]
    content, length = (
        check_parts.length_parts(DatasetContext(curves=draws, dataset="aqua")),
        check_parts.length_effect_parts(DatasetContext(curves=draws, dataset="aqua")),
    )
    shares = [next(p for p in parts if p.role is roles.SHARE).estimate.value for parts in (content, length)]
    # the same share both ways: log(Simplified / cut) / log(Simplified / Detailed) = log(2 / 1.4) / log 2
    assert shares[0] == pytest.approx(shares[1]) and shares[0] == pytest.approx(np.log(2 / 1.4) / np.log(2), abs=0.05)
    assert {roles.SHARE, roles.SECOND_VIEW} <= {p.role for p in content}
    assert not any(p.decides for p in content if p.role in (roles.SHARE, roles.SECOND_VIEW))


def test_too_few_samples_get_no_verdict():
    rows = make_results(_conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=4, curve=paper_like, seed=4)
    found = _findings(rows, ("F1", "F2", "F3", "L", "L2"))
    assert {f.verdict for f in found} == {TOO_FEW}


def test_f1_needs_the_gap_to_be_larger_early():
    def early_equal(model, dataset, setting, responses, proj, layers):
        return {"none": 3.0, "detailed": 1.0}[setting] * np.where(layers < 5, 0.6, 1.0)

    rows = make_results(
        _conditions(("aqua",), ("none", "detailed")),
        {BASE: ("base", 18)},
        n_samples=12,
        curve=lambda *a: early_equal(*a) if a[2] == "none" else np.ones_like(a[5], dtype=float),
        noise=0.02,
        sample_sd=0.05,
        seed=5,
    )
    found = _findings(rows, ("F1",))
    assert {f.verdict for f in found} == {FAILS}  # None > Detailed overall, but the gap is smaller early


def test_f3_leaves_identical_answers_out_of_the_none_rd():
    def none_irrelevant_far(model, dataset, setting, responses, proj, layers):
        curve = paper_like(model, dataset, setting, responses, proj, layers)
        return 2.0 * curve if responses == "irrelevant" and setting == "none" else curve

    rows = make_results(
        _conditions(("aqua",)),
        {BASE: ("base", 18)},
        n_samples=12,
        curve=none_irrelevant_far,
        noise=0.02,
        sample_sd=0.05,
        seed=6,
    )
    # the first 6 instructions answer the same under both response types: one input twice
    same = (rows["setting"] == "none") & (rows["sample_index"] < 6) & (rows["responses"] == "irrelevant")
    correct = rows[(rows["setting"] == "none") & (rows["sample_index"] < 6) & (rows["responses"] == "correct")]
    rows.loc[same, "nuclear_norm"] = correct["nuclear_norm"].to_numpy()
    mixed = _findings(rows, ("F3",))
    distinct = _findings(rows, ("F3",), identical={"aqua": frozenset(range(6))})
    assert distinct[0].verdict == FAILS  # irrelevant None answers are far from the correct ones
    none_ratio = [found[0].part(roles.NONE_RD).shown()[0] for found in (mixed, distinct)]
    assert none_ratio[0] < 0.8 * none_ratio[1]  # the identical pairs had pulled the ratio toward 1
    assert distinct[0].n == 6


def test_f4_holds_for_identical_models_and_fails_for_a_better_instruct_model():
    base = make_results(
        _conditions(), {BASE: ("base", 18)}, n_samples=8, curve=paper_like, noise=0.05, sample_sd=0.2, seed=7
    )
    same = base.assign(model=INSTRUCT, template="instruct")
    declared = {INSTRUCT: BASE}
    found = _findings(pd.concat([base, same]), ("F4",), declared=declared)
    assert _verdicts(found, "F4") == {HOLDS}
    assert found[0].part(roles.SIGNED_RATIO).shown() == (1.0, 1.0, 1.0)
    assert "instruct / base of Detailed irrelevant / correct x1.00 [x1.00, x1.00]" in voice.numbers(found[0])

    def sharper(model, dataset, setting, responses, proj, layers):
        curve = paper_like(model, dataset, setting, responses, proj, layers)
        return curve * 1.5 if responses == "irrelevant" and setting == "detailed" else curve  # x1.5 -> x2.25

    better = make_results(
        _conditions(), {INSTRUCT: ("instruct", 30)}, n_samples=8, curve=sharper, noise=0.02, sample_sd=0.05, seed=8
    )
    found = _findings(pd.concat([base, better]), ("F4",), declared=declared)
    assert _verdicts(found, "F4", pooled=True) == {FAILS}


def test_f4_is_not_applicable_to_two_families():
    """The offline models are two families: F4 says so, in every scope, with its reason."""
    base = make_results(_conditions(), {BASE: ("base", 18)}, n_samples=8, curve=paper_like, seed=7)
    same = base.assign(model=INSTRUCT, template="instruct")
    found = _findings(pd.concat([base, same]), ("F4",))
    assert _verdicts(found, "F4") == {rules.NOT_APPLICABLE}
    assert all(f.not_applicable.why is Why.NOT_ITS_BASE for f in found)
    assert all("not an instruct model of" in f.not_applicable.reason for f in found)
    assert pooling.is_own_base("Qwen/Qwen2-1.5B-Instruct", "Qwen/Qwen2-1.5B")
    assert not pooling.is_own_base(INSTRUCT, BASE)
    assert pooling.is_own_base(INSTRUCT, BASE, {INSTRUCT: BASE})


def test_a_pooled_verdict_needs_the_minimum_in_every_dataset():
    big = make_results(_conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=12, curve=paper_like, seed=12)
    small = make_results(_conditions(("gsm8k",)), {BASE: ("base", 18)}, n_samples=4, curve=paper_like, seed=13)
    family = _of(_findings(pd.concat([big, small]), ("F1",)), "F1", pooled=True)
    assert family[0].n == 16 and family[0].n_smallest == 4
    assert family[0].verdict == TOO_FEW


def test_f5_compares_wiki_with_a_reasoning_contrast_of_similar_length_ratio():
    wiki = [("wiki", s, r) for s in ("len100", "len1000") for r in ("correct", "irrelevant")]
    reasoning = _conditions(("aqua", "gsm8k"), ("simplified", "detailed"))
    rows = make_results(
        wiki + reasoning, {BASE: ("base", 18)}, n_samples=10, curve=paper_like, noise=0.02, sample_sd=0.05, seed=9
    )
    assert _verdicts(_findings(rows, ("F5",)), "F5") == {HOLDS}

    def long_wiki_flat(model, dataset, setting, responses, proj, layers):
        if setting == "len1000":
            return 1.0 + 0.001 * np.sin(1.7 * layers) ** 2  # MAD shrinks far more than Detailed vs Simplified
        return paper_like(model, dataset, setting, responses, proj, layers)

    rows = make_results(
        wiki + reasoning, {BASE: ("base", 18)}, n_samples=10, curve=long_wiki_flat, noise=0.02, sample_sd=0.05, seed=10
    )
    assert _verdicts(_findings(rows, ("F5",)), "F5") == {FAILS}


def test_f5_does_not_count_wiki_curves_already_smooth_at_100_words_as_not_smoothed():
    """Wiki curves smooth at every length have no roughness to lose: the former contrast of
    roughness lost (reasoning lost much, Wiki nothing) read "holds"; the shares are not computed
    where the 100-word roughness is not established, so the part is not resolved."""

    def wiki_smooth(model, dataset, setting, responses, proj, layers):
        if dataset == "wiki":
            return np.ones(layers.shape)
        return paper_like(model, dataset, setting, responses, proj, layers)

    wiki = [("wiki", s, r) for s in ("len100", "len1000") for r in ("correct", "irrelevant")]
    reasoning = _conditions(("aqua", "gsm8k"), ("simplified", "detailed"))
    rows = make_results(
        wiki + reasoning, {BASE: ("base", 18)}, n_samples=10, curve=wiki_smooth, noise=0.02, sample_sd=0.05, seed=9
    )
    cd = all_curve_draws(rows, [BASE], ("nuclear_norm",), n_resamples=300)[BASE]
    parts = {p.role: p for p in f5_wiki.f5_parts(cd)}
    short, long = quantities.mean_roughness(cd, "wiki", "len100"), quantities.mean_roughness(cd, "wiki", "len1000")
    simplified = quantities.mean_roughness(cd, "aqua", "simplified")
    detailed = quantities.mean_roughness(cd, "aqua", "detailed")
    assert simplified.value - detailed.value > 10 * abs(short.value - long.value)  # the former rule's "holds"
    assert parts[roles.SHARES].estimate is None
    assert not parts[roles.WIKI_ROUGHNESS].supports()
    assert _verdicts(_findings(rows, ("F5",)), "F5") == {UNRESOLVED}


def test_pooling_answers_what_single_datasets_cannot():
    rows = make_results(
        _conditions(("strategyqa", "ecqa", "creak", "sensemaking")),
        {BASE: ("base", 18)},
        n_samples=5,
        curve=paper_like,
        noise=0.05,
        sample_sd=0.3,
        seed=11,
    )
    pooled = _of(_findings(rows, ("F1",)), "F1", pooled=True)
    assert [f.scope for f in pooled] == ["commonsense_reasoning"] and pooled[0].n == 20
    assert pooled[0].verdict == HOLDS


def test_verdict_rule_on_parts():
    from analysis.findings.bootstrap import Estimate

    def part(center, spread, side="above", bound=0.0, n=20):
        draws = center + spread * np.random.default_rng(0).standard_normal(1000)
        return rules.Part(
            name="q",
            estimate=Estimate(center, draws, (("d", n),)),
            side=side,
            bound=bound,
            role=roles.SIMULATED,
            decides=True,
        )

    assert rules.decide([part(1.0, 0.1), part(2.0, 0.1)]) == HOLDS
    assert rules.decide([part(1.0, 0.1), part(0.0, 0.1)]) == UNRESOLVED
    assert rules.decide([part(1.0, 0.1), part(-1.0, 0.1)]) == FAILS
    assert rules.decide([part(0.05, 0.01, "below", 0.1)]) == HOLDS
    assert rules.decide([part(0.5, 0.01, "below", 0.1)]) == FAILS
    assert rules.decide([part(1.0, 0.1, n=4)]) == TOO_FEW
    assert (
        rules.decide([rules.Part(name="q", estimate=None, side="above", bound=0.0, role=roles.SIMULATED, decides=True)])
        == UNRESOLVED
    )
    # within a margin: two one-sided tests
    assert rules.decide([part(0.01, 0.01, "within", 0.1)]) == HOLDS
    assert rules.decide([part(0.08, 0.05, "within", 0.1)]) == UNRESOLVED
    assert rules.decide([part(-0.5, 0.01, "within", 0.1)]) == FAILS
    # a part shown beside the verdict does not decide it
    shown = rules.Part(
        name="paper",
        estimate=Estimate(-1.0, np.full(1000, -1.0), (("d", 20),)),
        side="above",
        bound=0.0,
        role=roles.SIMULATED,
        decides=False,
    )
    assert rules.decide([part(1.0, 0.1), shown]) == HOLDS


def test_model_pairs():
    offline = pooling.model_pairs(list(MODELS), {m: t for m, (t, _) in MODELS.items()})
    assert offline == {INSTRUCT: BASE}
    paper = pooling.model_pairs(
        ["Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b"],
        {"Qwen/Qwen2-1.5B": "base", "Qwen/Qwen2-1.5B-Instruct": "instruct", "google/gemma-2-2b": "base"},
    )
    assert paper == {"Qwen/Qwen2-1.5B-Instruct": "Qwen/Qwen2-1.5B"}
    assert pooling.default_model_pairs({"org/a-base": "base", "org/a-chat": "instruct", "x/b": "base"}) == {
        "org/a-chat": "org/a-base"
    }


def test_the_cpu_design_gives_no_false_verdict_and_f4_does_not_apply():
    """A synthetic store in the default profile's design: both offline models (two families),
    every condition, 5 samples, None CoT far noisier than the rest. The paper's picture is true
    here except that correct and irrelevant responses differ under no setting, so F3's Detailed
    part is false; every verdict is right or unresolved, and F4 is not applicable."""
    found = cpu_design_findings()
    assert _verdicts(found, "F4") == {rules.NOT_APPLICABLE}
    assert TOO_FEW not in {f.verdict for f in found}
    for check in ("F1", "L", "L2"):  # true here: never "does not hold"
        assert FAILS not in _verdicts(found, check), check
    assert HOLDS not in _verdicts(found, "F3")  # its Detailed part is false here
    unresolved = [f for f in found if f.verdict == UNRESOLVED]
    assert any(math.isfinite(f.instructions_needed()) for f in unresolved)  # the pages can say what would resolve them


# --------------------------------------------------------------------------- the paper's quantity beside


def test_every_magnitude_claim_shows_the_papers_mean_nuclear_norm_beside_and_names_its_quantity(paper_findings):
    for check in ("F1", "F3", "L", "L2"):
        found = _of(paper_findings, check)
        assert found and all(any(p.paper and not p.decides for p in f.parts) for f in found), check
        assert all(voice.PAPER_QUANTITY in voice.numbers(f) for f in found), check
        assert "geometric mean" in checks.claim(check) and "mean nuclear norm" in checks.claim(check)
    rows = make_results(_conditions(("aqua",)), MODELS, n_samples=8, curve=paper_like, sample_sd=0.05, seed=2)
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm",), n_resamples=200)
    parts = f4_instruct.f4_parts(draws[INSTRUCT], draws[BASE], "aqua")
    f4 = rules.Finding("F4", INSTRUCT, "aqua", False, tuple(parts))
    signed, paper = f4.part(roles.SIGNED_RATIO), f4.part(roles.SIGNED_RATIO, paper=True)
    assert [p.decides for p in parts] == [True, False, False, False] and f4.deciding == (f4.part(roles.SIZE_EXCESS),)
    assert voice.part_label(paper).startswith(voice.PAPER_QUANTITY)
    # the same irrelevant/correct ratio in both models: the signed difference and the paper's near 0,
    # and near each other; the sizes too
    assert abs(signed.estimate.value) < 0.1 and paper.estimate.value == pytest.approx(signed.estimate.value, abs=0.02)
    assert abs(f4.part(roles.SIZE_RATIO).estimate.value) < 0.1
    assert "geometric means" in checks.claim("F4") and "mean log curve" in checks.claim("F2")
    assert _verdicts(paper_findings, "F1") == {HOLDS}  # the parts beside decide nothing


def _skewed_none(n=40, seed=4, trend=False):
    """None CoT with a large log-scale spread (sigma 1.5) and a geometric mean below Detailed CoT's:
    its arithmetic mean lies above it (exp(sigma^2 / 2) = 3.1 times the geometric mean)."""
    rows = make_results(
        _conditions(("aqua",)), {BASE: ("base", 18)}, n_samples=n, curve=flat, sample_sd=0.05, seed=seed
    )
    rng = np.random.default_rng(seed)
    none = (rows["setting"] == "none").to_numpy()
    sigma = np.linspace(0.1, 1.5, 18)[rows["layer"].to_numpy()] if trend else 1.5
    z = rng.standard_normal(n)[rows["sample_index"].to_numpy()]
    factor = np.exp(sigma * z - 0.8)
    rows.loc[none, "nuclear_norm"] = rows.loc[none, "nuclear_norm"] * factor[none]
    return rows


def test_a_cell_where_the_two_means_disagree_in_sign_is_marked():
    rows = _skewed_none()
    cd = all_curve_draws(rows, [BASE], ("nuclear_norm",), n_resamples=400)[BASE]
    geometric = quantities.log_gap(cd, "aqua", "none", "detailed")
    paper = quantities.mean_gap(cd, "aqua", "none", "detailed")
    matrix = {
        s: rows[(rows["setting"] == s) & (rows["responses"] == "correct")]
        .groupby("sample_index")["nuclear_norm"]
        .mean()
        for s in ("none", "detailed")
    }
    assert paper.value == pytest.approx(np.log(matrix["none"].mean() / matrix["detailed"].mean()))
    assert geometric.value < 0 < paper.value  # the data are built so
    f1 = [f for f in checks.run_checks({BASE: cd}, ("F1",)) if f.scope == "aqua"][0]
    paper_part = f1.part(roles.F1_GAP, paper=True)
    assert paper_part.opposite
    assert voice.part_label(paper_part) == f"{voice.PAPER_QUANTITY}None / Detailed (all layers){voice.OPPOSITE_SIGN}"
    note = f1.note(NoteKind.OPPOSITE_SIGN)
    assert (
        "point opposite ways (one ratio above 1, the other below): None / Detailed (all layers)" in note.text
        and "None / Detailed (all layers)" in note.items
    )
    assert figures.verdict_cells([f1])["opposite_sign"].iloc[0]  # the verdict matrix marks the cell
    assert not paper_part.decides


def test_f2_decides_on_the_mean_curve_where_nones_log_spread_changes_across_layers():
    def f2_of(rows):
        cd = all_curve_draws(rows, [BASE], ("nuclear_norm",), n_resamples=400)[BASE]
        f2 = [f for f in checks.run_checks({BASE: cd}, ("F2",)) if f.scope == "aqua"][0]
        assert f2.part(roles.LOG_SPREAD_CHANGE) is not None
        return f2

    def mean_curve(f2):
        return f2.part(roles.NONE_MEAN_CURVE_ROUGHNESS, facet=("none", "simplified"))

    def none_q(f2):
        return f2.part(roles.NONE_ROUGHNESS, facet=("none", "simplified", "q"))

    changing = f2_of(_skewed_none(trend=True))
    assert "log-scale spread changes across layers" in changing.note(NoteKind.DECIDED_OTHERWISE).text
    assert mean_curve(changing).decides
    assert voice.part_label(mean_curve(changing)) == f"roughness None - Simplified {f2_rougher.MEAN_CURVE_ROUGHNESS}"
    assert not none_q(changing).decides
    # Simplified vs Detailed keeps the log curve
    assert changing.part(roles.ROUGHNESS, facet=("simplified", "detailed", "q")).decides
    steady = f2_of(_skewed_none(trend=False))
    assert steady.note(NoteKind.DECIDED_OTHERWISE) is None and not any(
        "log-scale spread" in n.text for n in steady.notes
    )
    assert none_q(steady).decides and not mean_curve(steady).decides


# --------------------------------------------------------------------------- "nearly the same" and "no better" on the curves


def _ratio_store(ratio_of, n=200, seed=31, models=None):
    """aqua with None and Detailed CoT, correct and irrelevant responses, None CoT noisy; the
    irrelevant curve is ``ratio_of(model, setting, layers)`` times the correct one."""

    def curve(model, dataset, setting, responses, proj, layers):
        base = LEVEL[setting] * (1 + 0.05 * np.sin(1.7 * layers))
        return base * (ratio_of(model, setting, layers) if responses == "irrelevant" else 1.0)

    rows = make_results(
        _conditions(("aqua",), ("none", "detailed")),
        models or {BASE: ("base", 18)},
        n_samples=n,
        curve=curve,
        noise=0.2,
        sample_sd=0.1,
        seed=seed,
    )
    return rows


def _cancelling(model, setting, layers):
    """None CoT: +30% in the first layer to -30% in the last on the log scale (mean 0); Detailed
    irrelevant clearly larger (x1.5)."""
    if setting == "detailed":
        return np.full(layers.shape, 1.5)
    return np.exp(np.log(1.3) * np.linspace(1.0, -1.0, layers.size))


def test_f3_does_not_call_cancelling_none_curves_nearly_the_same():
    """The signed mean over layers of a ratio running from +30% to -30% is 0, and its interval lies
    within the margin at 200 instructions; the curves' root-mean-square difference does not."""
    for seed in (31, 32):
        cd = all_curve_draws(_ratio_store(_cancelling, seed=seed), [BASE], ("nuclear_norm",), n_resamples=200)[BASE]
        f3 = [f for f in checks.run_checks({BASE: cd}, ("F3",)) if f.scope == "aqua"][0]
        assert f3.part(roles.NONE_RD).supports()  # what the former rule decided on
        assert not f3.part(roles.NONE_RD).decides
        assert f3.verdict == FAILS  # the root-mean-square (log 1.3 / sqrt 3 = 0.15) lies above log 1.1
        assert f3.part(roles.NONE_SAME).contradicts()


def test_the_nearly_same_rule_holds_its_rate_where_the_curves_cancel():
    """Simulated through the book's quantity at the boundary (root-mean-square exactly the margin,
    signed mean 0) at 200 instructions: "holds" at most the promised 2.5% (two Monte Carlo s.e.)."""
    from analysis.findings import calibration
    from analysis.findings.calibration import ratio_sizes

    design = calibration.study_designs(200)["one dataset"]
    rng = np.random.default_rng(33)
    reps = 300
    hits = sum(rules.decide([ratio_sizes.same_part(rng, design, rules.SAME_MARGIN, 100)]) == HOLDS for _ in range(reps))
    assert hits / reps <= 0.025 + 2 * np.sqrt(0.025 * 0.975 / reps)


def test_f3_can_call_truly_equal_none_curves_nearly_the_same_at_large_n():
    equal = lambda model, setting, layers: np.full(layers.shape, 1.5 if setting == "detailed" else 1.0)  # noqa: E731
    cd = all_curve_draws(_ratio_store(equal, n=200, seed=34), [BASE], ("nuclear_norm",), n_resamples=200)[BASE]
    f3 = [f for f in checks.run_checks({BASE: cd}, ("F3",)) if f.scope == "aqua"][0]
    assert f3.verdict == HOLDS


def _f4_of(instruct_ratio, base_ratio, seed=35):
    def ratio_of(model, setting, layers):
        return np.full(layers.shape, instruct_ratio if model == INSTRUCT else base_ratio)

    models = {BASE: ("base", 18), INSTRUCT: ("instruct", 18)}
    rows = _ratio_store(ratio_of, n=60, seed=seed, models=models)
    draws = all_curve_draws(rows, list(models), ("nuclear_norm",), n_resamples=300)
    found = checks.run_checks(draws, ("F4",), pairs={INSTRUCT: BASE}, declared={INSTRUCT: BASE})
    return [f for f in found if f.scope == "aqua"][0]


def test_f4_decides_on_the_size_of_the_separation_whatever_its_direction():
    """Signed, a base model at 0.8 and an instruct model at 1.0 read "instruct better" (log 1.25 >
    log 1.1); by size the instruct model separates less: "no better" holds. An instruct model that
    separates more strongly than its base in the other direction (0.7 against 1.1) read "holds"
    signed; by size it separates better (log 1/0.7 - log 1.1 > log 1.1): not "holds". Equal sizes in
    opposite directions (0.8 against 1.25) separate equally well: "no better" is true and holds."""
    not_separating = _f4_of(1.0, 0.8)
    assert not_separating.part(roles.SIGNED_RATIO).contradicts()  # the former rule: fails
    assert not_separating.verdict == HOLDS
    stronger_opposite = _f4_of(0.7, 1.1)
    assert stronger_opposite.part(roles.SIGNED_RATIO).supports()  # the former rule: holds
    assert stronger_opposite.verdict == FAILS
    assert _f4_of(0.8, 1.25).verdict == HOLDS


def interval_estimate(low: float, high: float, n: int = 10):
    """An estimate whose 95% interval is about [low, high]."""
    from analysis.findings.bootstrap import Estimate

    return Estimate((low + high) / 2, np.linspace(low, high, 4001), (("d", n),))


def step_part(low: float, high: float, *, n: int = 10, side="above", bound=0.0, margin=rules.SAME_MARGIN):
    return rules.Part(
        name="a step",
        estimate=interval_estimate(low, high, n),
        side=side,
        bound=bound,
        unit=rules.Unit.RATIO,
        role=roles.SIMULATED,
        margin=margin,
        decides=True,
    )


@pytest.mark.parametrize(
    ("low", "high", "outcome"),
    [
        (0.2, 0.6, rules.Outcome.LARGER),
        (-0.6, -0.2, rules.Outcome.SMALLER),
        (-0.05, 0.05, rules.Outcome.SAME),
        (0.01, 0.05, rules.Outcome.LARGER),  # the sign first: clears 0, by less than the margin
        (-0.3, 0.3, rules.Outcome.UNRESOLVED),
        (-0.05, rules.SAME_MARGIN + 0.02, rules.Outcome.UNRESOLVED),  # reaches 0 and leaves the margin
    ],
)
def test_a_part_is_decided_when_it_clears_its_bound_or_lies_within_its_margin(low, high, outcome):
    part = step_part(low, high)
    assert part.outcome is outcome and part.outcome.decided is (outcome is not rules.Outcome.UNRESOLVED)
    assert part.supports() is (outcome is rules.Outcome.LARGER)  # its claim: above 0


def test_a_part_without_a_margin_is_never_about_the_same_and_a_within_part_is_about_the_same_inside():
    assert step_part(-0.05, 0.05, margin=None).outcome is rules.Outcome.UNRESOLVED
    within = step_part(0.01, 0.05, side="within", bound=rules.SAME_MARGIN, margin=None)
    assert within.outcome is rules.Outcome.SAME and within.supports()  # inside the margin, though above 0
    outside = step_part(0.2, 0.4, side="within", bound=rules.SAME_MARGIN, margin=None)
    assert outside.outcome is rules.Outcome.LARGER and outside.contradicts()


def test_a_part_on_too_few_instructions_is_not_decided_and_its_finding_has_too_few_samples():
    part = step_part(0.2, 0.6, n=4)
    assert part.outcome is rules.Outcome.TOO_FEW and not part.outcome.decided
    assert rules.decide([part]) is TOO_FEW


def test_each_role_of_a_claim_is_read_by_the_claim_s_own_rule():
    """A claim holds exactly where every role holds and fails exactly where a role fails, a role read
    at the claim's Bonferroni level (the claims table reads a claim part by part)."""
    from analysis.findings.bootstrap import Estimate

    def part(center, role, n=20):
        draws = center + 0.1 * np.random.default_rng(0).standard_normal(1000)
        return rules.Part(
            name="q", estimate=Estimate(center, draws, (("d", n),)), side="above", bound=0.0, role=role, decides=True
        )

    first, second = roles.F1_GAP, roles.EARLY_LATE
    centers = (-1.0, -0.21, 0.0, 0.21, 1.0)  # +-0.21: outside the 95% interval, inside the 97.5% one
    for a in centers:
        for b in centers:
            parts = [part(a, first), part(b, second)]
            each = {rules.decide_role(parts, role) for role in (first, second)}
            assert (rules.decide(parts) == HOLDS) == (each == {HOLDS})
            assert (rules.decide(parts) == FAILS) == (FAILS in each)
    alone, paired = [part(-0.21, first)], [part(-0.21, first), part(1.0, second)]
    assert rules.decide_role(alone, first) == FAILS and rules.decide_role(paired, first) == UNRESOLVED
    # no verdict for the claim, none for any of its roles: too few instructions, or no estimate, anywhere
    few = [part(-1.0, first), part(1.0, second, n=4)]
    assert rules.decide(few) == TOO_FEW and {rules.decide_role(few, r) for r in (first, second)} == {TOO_FEW}
    missing = [part(-1.0, first), replace(part(1.0, second), estimate=None)]
    assert rules.decide(missing) == UNRESOLVED and rules.decide_role(missing, first) == UNRESOLVED
