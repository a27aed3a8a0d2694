"""G1 (F3 beyond the loss) on synthetic pairs whose truth is known: it finds curves that carry
information the token losses lack, keeps its rate where the curves are a non-linear function of the
token losses, and says "the loss separates them" where the loss alone does."""

import math
from dataclasses import replace

import numpy as np
import pytest
from sklearn.linear_model import Ridge, RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from synthetic import make_results, reasoning_conditions

from analysis import checks
from analysis.findings import beyond_loss, calibration, classifier, roles
from analysis.findings.bootstrap import Estimate, all_curve_draws, pooled
from analysis.findings.calibration import gap_calibration, rule
from analysis.findings.rules import HOLDS, NOT_APPLICABLE, UNRESOLVED, NoteKind, Part, Why, decide
from analysis.report import voice

MODEL = {"m": ("instruct", 8)}
DATASETS = ("aqua", "gsm8k")


def _rows(beyond: float, seed: int, n: int = 30, *, loss_gap: float = 0.3):
    """Correct and irrelevant responses whose mean, largest and spread of token losses tell them apart a
    little, and whose curves are a non-linear function of those plus noise, with ``beyond`` added to the
    irrelevant curves in the late layers (information the loss lacks)."""
    rng = np.random.default_rng(seed)
    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"))]
    rows = make_results(conditions, MODEL, n, seed=seed)
    per_sample = {}
    for condition in rows["condition"].unique():
        irrelevant = condition.endswith("irrelevant")
        loss = 1.0 + loss_gap * irrelevant + 0.5 * rng.standard_normal(n)
        per_sample[condition] = (loss, loss + rng.exponential(1.0, n), 0.5 + rng.exponential(0.3, n))
    key = list(zip(rows["condition"], rows["sample_index"]))
    for j, column in enumerate(("loss", "loss_max", "loss_sd")):
        rows[column] = np.array([per_sample[c][j][i] for c, i in key])
    late = (rows["layer"] >= 4).to_numpy()
    extra = beyond * rows["condition"].str.endswith("irrelevant").to_numpy() * late
    curve = 0.8 * np.log1p(rows["loss"].abs()) + 0.3 * np.sqrt(rows["loss_max"].clip(lower=0)) * rows["loss_sd"]
    rows["nuclear_norm"] = np.exp(curve + extra + 0.3 * rng.standard_normal(len(rows)))
    return rows


def _g1(rows, seed: int = 0, stats=beyond_loss.READS):
    draws = all_curve_draws(rows, list(MODEL), ("nuclear_norm",), n_resamples=20, seed=seed, sample_stats=stats)
    return {f.scope: f for f in checks.run_checks(draws, ["G1"])}


def test_curves_carrying_more_than_the_token_losses_give_g1_holds():
    found = _g1(_rows(1.0, seed=0))
    assert set(found) == {*DATASETS, "math_reasoning"}
    assert all(f.verdict == HOLDS for f in found.values()), [voice.numbers(f) for f in found.values()]
    family = found["math_reasoning"]
    # at a loss gap of 0.3 nats (spread 0.5) enough pairs lie within the caliper: they decide
    deciding = (beyond_loss.DECIDING, beyond_loss.MATCHED)
    assert [(p.role, p.facet) for p in family.deciding] == [(roles.BEYOND_LOSS, deciding)]
    assert [voice.part_label(p) for p in family.deciding] == [f"Detailed CoT {beyond_loss.MATCHED_STATISTIC}"]
    matched = family.note(NoteKind.LOSS_MATCHED)
    assert matched is not None and matched.items == DATASETS
    close = dict(family.part(roles.BEYOND_LOSS, facet=deciding).estimate.strata)
    assert matched.text.endswith(f"(aqua {close['aqua']} of 30, gsm8k {close['gsm8k']} of 30)")
    assert min(close.values()) >= beyond_loss.MIN_MATCHED
    share = found["aqua"].part(roles.MATCHED_SHARE, facet=(beyond_loss.DECIDING,)).value
    assert share == pytest.approx(close["aqua"] / 30)
    # the family's p-value is the pooled null's, not the mean of the datasets' p-values
    statistic = family.part(roles.BEYOND_LOSS, facet=deciding).estimate
    assert family.part(roles.P_VALUE, facet=deciding).estimate.value == statistic.p_value()
    assert statistic.p_value() == pytest.approx(1 / (1 + beyond_loss.N_FLIPS))
    assert "None CoT" in {p.group for p in found["aqua"].parts}
    assert found["aqua"].part(roles.BEYOND_LOSS, facet=("none",)) is not None
    covariates = found["aqua"].note(NoteKind.COVARIATES)
    assert "covariates: mean token loss, largest token loss" in covariates.text
    assert covariates.items[:2] == ("mean token loss", "largest token loss")


def test_curves_that_are_the_token_losses_through_a_non_linear_function_do_not_give_g1_holds():
    verdicts = [f.verdict for seed in range(2) for f in _g1(_rows(0.0, seed)).values()]
    assert HOLDS not in verdicts and set(verdicts) <= {UNRESOLVED}


def test_an_imported_store_without_the_token_losses_uses_the_mean_loss_only():
    found = _g1(_rows(1.0, seed=1), stats=("loss",))
    notes = [f.note(NoteKind.COVARIATES) for f in found.values()]
    assert all(n.text.startswith("covariates: the mean token loss only") for n in notes)
    assert all(n.items == (beyond_loss.COVARIATES[beyond_loss.LOSS],) for n in notes)
    draws = all_curve_draws(_rows(0.0, 1), list(MODEL), ("nuclear_norm",), n_resamples=5, sample_stats=("loss",))
    assert beyond_loss.paired(draws["m"], "aqua", "detailed").names == (beyond_loss.LOSS,)


def test_where_the_loss_separates_every_pair_g1_is_not_applicable_and_says_so():
    found = _g1(_rows(0.0, seed=2, n=12, loss_gap=6.0))
    assert all(f.verdict == NOT_APPLICABLE for f in found.values())
    assert all(f.not_applicable.why is Why.LOSS_SEPARATES for f in found.values())
    assert all(voice.explained(f.not_applicable).startswith(beyond_loss.SEPARATED) for f in found.values())
    # and it says how many pairs matched, per dataset
    assert "within 0.25 nats: aqua under 2 of 12, gsm8k under 2 of 12" in found["math_reasoning"].not_applicable.detail


def test_g1_decides_on_all_pairs_where_a_dataset_has_too_few_matched_pairs():
    rows = _rows(1.0, seed=0, loss_gap=0.3)
    gsm8k_irrelevant = rows["condition"].str.startswith("gsm8k/detailed/irrelevant")
    rows.loc[gsm8k_irrelevant, "loss"] += 3.0  # gsm8k's pairs no longer match; aqua's still do
    found = _g1(rows)
    assert found["aqua"].note(NoteKind.LOSS_MATCHED) is not None
    for scope in ("gsm8k", "math_reasoning"):
        assert found[scope].note(NoteKind.LOSS_MATCHED) is None
        assert [p.facet for p in found[scope].deciding] == [(beyond_loss.DECIDING,)]
    assert "gsm8k under 2 of 30" in beyond_loss.matched_counts(found["math_reasoning"].parts)


@pytest.mark.parametrize("features", [5, 30])  # fewer features than rows, and more (the Gram route)
def test_ridge_decisions_are_the_ridge_classifiers_for_every_labelling(features):
    rng = np.random.default_rng(0)
    train, test = rng.standard_normal((12, features)), rng.standard_normal((4, features))
    train[:, 1] = 2.0  # a constant feature, left as it is by the standardisation
    targets = rng.choice([-1.0, 1.0], (12, 3))
    scores = classifier.ridge_decisions(train, targets, test, 5.0)
    for column in range(3):
        alone = make_pipeline(StandardScaler(), Ridge(alpha=5.0)).fit(train, targets[:, column]).predict(test)
        np.testing.assert_allclose(scores[:, column], alone, rtol=1e-9, atol=1e-12)
        reference = RidgeClassifier(alpha=5.0).fit(StandardScaler().fit_transform(train), targets[:, column] > 0)
        scaled = StandardScaler().fit(train).transform(test)
        np.testing.assert_allclose(scores[:, column], reference.decision_function(scaled), rtol=1e-9, atol=1e-12)


def test_at_matched_loss_the_covariates_the_caliper_did_not_match_are_partialled_first():
    rng = np.random.default_rng(2)
    n = 8
    correct, irrelevant = rng.standard_normal((n, 4)), rng.standard_normal((n, 4))
    pairs = beyond_loss.Pairs(np.arange(n), rng.standard_normal((n, 6)), correct, irrelevant, beyond_loss.READS)
    column = {name: irrelevant[:, i] - correct[:, i] for i, name in enumerate(beyond_loss.READS)}
    matched = pairs.basis(matched=True)
    assert np.allclose(matched[:, 0], column[beyond_loss.TOKENS])  # log R first
    assert np.allclose(matched[:, 1], column[beyond_loss.LOSS_SD])  # then the spread
    assert np.allclose(matched[:, 3], column[beyond_loss.LOSS])  # the mean loss the caliper matched last
    assert np.allclose(pairs.basis()[:, 0], column[beyond_loss.LOSS])  # on all pairs, the mean loss first


def _ordered(n: int, seed: int = 3) -> beyond_loss.Pairs:
    """``n`` pairs whose curves tell irrelevant from correct perfectly."""
    rng = np.random.default_rng(seed)
    return beyond_loss.Pairs(
        np.arange(n), 3.0 + 0.1 * rng.standard_normal((n, 6)), np.zeros((n, 1)), np.zeros((n, 1)), ("loss",)
    )


@pytest.mark.parametrize(("n", "can_decide"), [(5, False), (beyond_loss.MIN_MATCHED, True)])
def test_a_dataset_needs_seven_matched_pairs_for_its_sign_flips_to_reach_the_level(n, can_decide):
    """Pairs whose curves tell irrelevant from correct perfectly: the exact p-value is one over the
    2^(n - 1) distinct flips, 1/16 at 5 pairs (not under 2.5%), 1/64 at ``MIN_MATCHED`` = 7."""
    estimate = beyond_loss.beyond_estimate(_ordered(n), "d", "detailed")
    assert estimate.value == pytest.approx(1.0)
    assert estimate.p_value() == 1 / 2 ** (n - 1)
    assert (estimate.p_value() < 0.025) is can_decide, estimate.p_value()


def _unclear(n: int, seed: int = 5) -> beyond_loss.Pairs:
    """``n`` pairs whose curves tell irrelevant from correct a little, the covariates noise."""
    rng = np.random.default_rng(seed)
    curves = 0.3 + rng.standard_normal((n, 6))
    return beyond_loss.Pairs(
        np.arange(n), curves, rng.standard_normal((n, 4)), rng.standard_normal((n, 4)), beyond_loss.READS
    )


def test_up_to_twelve_pairs_every_distinct_flip_is_scored_and_above_the_random_ones(monkeypatch):
    n = beyond_loss.EXACT_PAIRS
    signs = beyond_loss.every_flip(n)
    assert signs.shape == (n, 2 ** (n - 1)) and (signs[0] == 1).all() and (signs[:, 0] == 1).all()
    # every flip once, up to the flip of every pair (which leaves the statistic)
    assert len({tuple(c) for c in signs.T} | {tuple(-c) for c in signs.T}) == 2**n
    exact = beyond_loss.beyond_estimate(_unclear(n), "d", "detailed")
    assert exact.null.size == 2 ** (n - 1) - 1 and exact.draws.size == beyond_loss.N_FLIPS
    monkeypatch.setattr(beyond_loss, "every_flip", None)  # above twelve pairs nothing is enumerated
    drawn = beyond_loss.beyond_estimate(_unclear(n + 1), "d", "detailed")
    assert drawn.null.size == beyond_loss.N_FLIPS and np.array_equal(drawn.draws, drawn.null)
    with pytest.raises(TypeError):
        beyond_loss.beyond_estimate(_unclear(n), "d", "detailed")


def test_the_random_flips_read_from_the_enumerated_ones_are_those_flips_computed_directly():
    pairs = _unclear(9)
    estimate = beyond_loss.beyond_estimate(pairs, "d", "detailed")
    direct = beyond_loss.mean_aurocs(pairs.curves, beyond_loss.flips(pairs.n, "d", "detailed"), pairs.basis())
    assert estimate.value == pytest.approx(direct[0])
    np.testing.assert_allclose(estimate.draws, direct[1:], rtol=1e-9)
    assert np.unique(estimate.draws).size > 10  # the random flips differ


def test_the_exact_p_value_is_what_many_random_flips_give_within_their_monte_carlo_error():
    pairs, flips = _unclear(10), 20_000
    exact = beyond_loss.beyond_estimate(pairs, "d", "detailed").p_value()
    values = beyond_loss.mean_aurocs(pairs.curves, beyond_loss.flips(pairs.n, "d", "detailed", flips), pairs.basis())
    drawn = (1 + np.sum(values[1:] >= values[0] - 1e-12)) / (1 + flips)
    assert 0.05 < exact < 0.95  # a p-value that flips can miss on either side
    assert abs(drawn - exact) < 4 * math.sqrt(exact * (1 - exact) / flips), (drawn, exact)


def test_a_family_pools_the_random_flips_of_datasets_whose_flips_are_enumerated():
    small, large = (beyond_loss.beyond_estimate(_unclear(n, seed=n), f"d{n}", "detailed") for n in (8, 20))
    family = pooled([small, large])
    np.testing.assert_array_equal(family.null, (small.draws + large.draws) / 2)
    assert pooled([small]).null is small.null  # one dataset keeps its exact null


def test_a_flip_of_every_pair_leaves_the_statistic_and_the_partialling_fits_training_pairs_only():
    rng = np.random.default_rng(1)
    n = 12
    pairs = beyond_loss.Pairs(
        np.arange(n),
        rng.standard_normal((n, 6)),
        rng.standard_normal((n, 4)),
        rng.standard_normal((n, 4)),
        beyond_loss.READS,
    )
    signs = beyond_loss.flips(n, "d", "detailed", 3)
    both = np.hstack([signs, -signs])
    values = beyond_loss.mean_aurocs(pairs.curves, both, pairs.basis())
    assert np.allclose(values[:4], values[4:])
    # a pair's residual under the fit of the others does not move when its own curves do
    train = np.arange(1, n)
    moved = pairs.curves.copy()
    moved[0] += 5.0
    assert np.allclose(
        beyond_loss._residuals(pairs.curves, pairs.basis(), train)[1:],
        beyond_loss._residuals(moved, pairs.basis(), train)[1:],
    )


def test_a_permutation_part_decides_by_its_p_value_and_never_says_does_not_hold():
    null = np.linspace(0.3, 0.7, 200)
    high = Estimate(0.9, null, (("d", 20),), null=null)
    low = Estimate(0.1, null, (("d", 20),), null=null)
    assert high.p_value() == pytest.approx(1 / 201) and low.p_value() == 1.0
    assert decide([Part(name="x", estimate=high, side="above", bound=0.5, role=roles.SIMULATED, decides=True)]) == HOLDS
    assert (
        decide([Part(name="x", estimate=low, side="above", bound=0.5, role=roles.SIMULATED, decides=True)])
        == UNRESOLVED
    )
    assert math.isnan(high.interval()[0])
    family = pooled([high, low])
    assert np.allclose(family.null, null) and family.value == pytest.approx(0.5)


@pytest.mark.parametrize("skew", [-2.0, 2.0])
def test_g1_keeps_its_rate_where_the_curves_are_non_linear_in_the_token_losses_under_skewed_noise(skew):
    reps = 100
    bound = 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps)
    design = replace(calibration.study_designs(5)["4 datasets"], skew=skew)
    assert calibration.false_holds(rule.BEYOND_LOSS, design, reps=reps, seed=31 + int(skew)) <= bound


def test_g1_keeps_its_rate_where_it_decides_on_matched_pairs():
    reps = 100
    bound = 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps)
    design = calibration.Design((40, 40), (0.6, 0.6), (0.15, 0.15))
    rng = np.random.default_rng(7)
    pairs = gap_calibration._token_pairs(rng, design, 40, noise=gap_calibration.CURVE_NOISE[0], effect=0.0)
    assert pairs.within_caliper().sum() >= beyond_loss.MIN_MATCHED  # the matched route is the one taken
    assert calibration.false_holds(rule.BEYOND_LOSS, design, reps=reps, seed=41) <= bound


def test_g1_finds_a_planted_effect_at_the_paper_size():
    rng = np.random.default_rng(4)
    design = calibration.Design((40, 40), (0.6, 0.6), (0.15, 0.15))
    assert all(gap_calibration.beyond_loss_holds(rng, design, noise=0.3, effect=0.5) for _ in range(2))


def test_the_chapter_states_the_statistic_its_p_value_and_the_covariates():
    from analysis.checks import g1_beyond_loss
    from analysis.report import check_sections

    draws = all_curve_draws(
        _rows(1.0, seed=0), list(MODEL), ("nuclear_norm",), n_resamples=20, sample_stats=beyond_loss.READS
    )
    findings = checks.run_checks(draws, ["G1"])
    g1 = g1_beyond_loss.CHECK
    text = "\n\n".join(check_sections.paragraphs(findings, g1))
    assert (
        "AUROC of the curves with the loss partialled out" in text
        and "p = 0.00498 by sign flips of whole pairs" in text
    )
    assert "G1 **holds**" in text and "covariates: mean token loss, largest token loss" in text
    table = check_sections.parts_table(findings, g1)
    assert {beyond_loss.STATISTIC, beyond_loss.P_VALUE, beyond_loss.LOSS_ALONE} <= set(table.columns)
    assert "mean token loss, largest token loss" in g1_beyond_loss.covariates_line(findings)  # the line under it
    assert set(table["setting"]) == {"Detailed CoT", "Detailed CoT, matched pairs", "None CoT"}
    assert "partialled out on the pairs matched on the loss (aqua " in text  # it decided on them
    separated = list(_g1(_rows(0.0, seed=2, n=12, loss_gap=6.0)).values())
    text = "\n\n".join(check_sections.paragraphs(separated, g1))
    assert "G1 **not applicable** (the loss separates them" in text


def _screened(rows):
    """The ``rows``' Detailed-CoT pairs as a loss screen's (ids from 100, every pair matched), and the
    screens of both datasets that found them (one more instruction screened, unmatched)."""
    from analysis.extract.screens import Screen, Screened

    moved = rows[rows["condition"].str.contains("/detailed/")].copy()
    moved["sample_index"] += 100
    correct = moved[moved["responses"] == "correct"].groupby(["dataset", "sample_index"])["loss"].first()
    irrelevant = moved["responses"] == "irrelevant"
    keys = list(zip(moved.loc[irrelevant, "dataset"], moved.loc[irrelevant, "sample_index"]))
    shifts = np.random.default_rng(4).uniform(-0.2, 0.2, len(correct))
    shift = dict(zip(correct.index, shifts))
    moved.loc[irrelevant, "loss"] = [correct[k] + shift[k] for k in keys]  # every screened pair matches
    made = []
    for dataset in DATASETS:
        ids = sorted(moved.loc[moved["dataset"] == dataset, "sample_index"].unique())
        losses = moved[moved["dataset"] == dataset].groupby(["sample_index", "responses"])["loss"].first()
        entries = [Screened(int(i), float(losses[i, "correct"]), float(losses[i, "irrelevant"])) for i in ids]
        made.append(
            Screen("m", dataset, "instruct", 1024, 0.25, 5, 60, 400, 12, 0, entries + [Screened(999, 1.0, 9.0)])
        )
    return moved, made


def test_the_loss_screens_matched_pairs_decide_g1_beside_the_drawn_ones_and_nothing_else():
    drawn = _rows(1.0, seed=2, n=12, loss_gap=6.0)  # no drawn pair matches
    extra, made = _screened(_rows(2.0, seed=3, n=10, loss_gap=0.0))
    stats = ("nuclear_norm",)
    alone = all_curve_draws(drawn, list(MODEL), stats, n_resamples=20, sample_stats=beyond_loss.READS)
    screened = all_curve_draws(
        drawn, list(MODEL), stats, n_resamples=20, sample_stats=beyond_loss.READS, screened=extra, screens=made
    )
    before = {f.scope: f for f in checks.run_checks(alone, ["G1"])}
    after = {f.scope: f for f in checks.run_checks(screened, ["G1"])}
    assert all(f.verdict == NOT_APPLICABLE for f in before.values())
    family = after["math_reasoning"]
    deciding = (beyond_loss.DECIDING, beyond_loss.MATCHED)
    close = dict(family.part(roles.BEYOND_LOSS, facet=deciding).estimate.strata)
    within = {d: int((np.abs(e.irrelevant[:, 0] - e.correct[:, 0]) <= 0.25).sum()) for d, e in _pairs_of(extra).items()}
    assert close == within and min(close.values()) >= beyond_loss.MIN_MATCHED
    assert family.verdict == HOLDS and [p.facet for p in family.deciding] == [deciding]
    counts = f"aqua {close['aqua']} of 12 drawn and 11 screened, gsm8k {close['gsm8k']} of 12 drawn and 11 screened"
    assert family.note(NoteKind.LOSS_MATCHED).text.endswith(f"({counts})")
    share = after["aqua"].part(roles.MATCHED_SHARE, facet=(beyond_loss.DECIDING, beyond_loss.SCREENED))
    assert share.value == pytest.approx(close["aqua"] / 11)
    # the chapter's table shows that share on the matched pairs' row, one row per scope and setting
    from analysis.checks import g1_beyond_loss

    table = g1_beyond_loss.auroc_table(list(after.values()), voice.sized)
    assert not table.duplicated(["model", "scope", "setting"]).any()
    matched_row = table[(table["scope"] == "aqua") & (table["setting"] == "Detailed CoT, matched pairs")]
    assert matched_row[beyond_loss.SCREENED_WITHIN].tolist() == [voice.sized(share)]
    # the statistic on the drawn pairs and every other part read the drawn pairs only
    for scope in before:
        for part in before[scope].parts:
            assert after[scope].part(part.role, facet=part.facet).value == pytest.approx(part.value)


def _pairs_of(rows):
    draws = all_curve_draws(rows, list(MODEL), ("nuclear_norm",), n_resamples=5, sample_stats=beyond_loss.READS)
    return {d: beyond_loss.paired(draws["m"], d, "detailed") for d in DATASETS}
