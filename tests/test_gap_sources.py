"""A1 (F1 beyond averaging) on synthetic results whose truth is known, the error rates of A1, A3 and
G1 where their claims are false (G1 itself: test_beyond_loss.py), and the chapter that states them."""

import math

import numpy as np
import pytest
from blocks_read import tables_of, walk
from synthetic import make_results, reasoning_conditions

from analysis import checks
from analysis.extract import screens
from analysis.extract.screens import Screen, Screened
from analysis.findings import averaging, roles
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.rules import HOLDS, NOT_APPLICABLE, NotApplicable, Verdict, Why
from analysis.report import voice
from analysis.report.blocks import Figure, Markdown

MODEL = {"m": ("instruct", 8)}
STATS = ("nuclear_norm",)
PER_SAMPLE = ("frobenius", "n_response_tokens", "loss")
DATASETS = ("aqua", "gsm8k")


def _level(per_token_gap: float):
    """Curves equal in every setting except None CoT's, larger by ``per_token_gap`` (log scale)."""

    def curve(model, dataset, setting, responses, proj, layers):
        return np.exp(per_token_gap * (setting == "none")) * (1 + 0.05 * np.sin(layers))

    return curve


def _a1(per_token_gap: float, seed: int, n: int = 8):
    """A1's verdicts (per dataset and pooled) where the Frobenius norm is the per-token level times
    1 / sqrt(R): pure averaging when ``per_token_gap`` is 0."""
    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"), ("correct",))]
    rows = make_results(
        conditions, MODEL, n, _level(per_token_gap), noise=0.05, sample_sd=0.4, length_exponent=-0.5, seed=seed
    )
    draws = all_curve_draws(rows, list(MODEL), STATS, n_resamples=200, seed=seed, sample_stats=PER_SAMPLE)
    return checks.run_checks(draws, ["A1", "F1"])


def test_pure_averaging_gives_a_large_f1_gap_and_a1_holds_at_most_at_its_error_rate():
    runs = [_a1(0.0, seed) for seed in range(100)]
    f1_pooled = [f for found in runs for f in found if f.check == "F1" and f.pooled]
    assert sum(f.parts[0].supports() for f in f1_pooled) >= 95  # averaging alone makes F1's first part large
    a1 = [f for found in runs for f in found if f.check == "A1" and not f.pooled]
    assert len(a1) == 200
    # at most 2.5% wrongly "holds", allowing two Monte Carlo standard errors at 200 verdicts
    assert sum(f.verdict == HOLDS for f in a1) / len(a1) <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / len(a1))


def test_a_real_per_token_gap_gives_a1_holds_and_its_parts_add_up():
    found = _a1(0.5, seed=3, n=20)
    a1 = {f.scope: f for f in found if f.check == "A1"}
    assert set(a1) == {*DATASETS, "math_reasoning"} and all(f.verdict == HOLDS for f in a1.values())
    parts = {p.role: p.estimate.value for p in a1["aqua"].parts}
    assert a1["aqua"].part(roles.BEYOND_AVERAGING).name == averaging.A1_PART
    frobenius, averaged = parts[roles.FROBENIUS_GAP], parts[roles.AVERAGING]
    assert parts[roles.BEYOND_AVERAGING] == pytest.approx(frobenius - averaged)
    assert parts[roles.BEYOND_AVERAGING] == pytest.approx(0.5, abs=0.25)
    scaled = parts[roles.NUCLEAR_BEYOND_AVERAGING]
    assert scaled == pytest.approx(parts[roles.BEYOND_AVERAGING] + parts[roles.SHAPE])
    assert averaged == pytest.approx(0.5 * math.log(300 / 4), abs=0.4)


def test_a1_says_token_counts_unknown_with_the_command_where_r_is_not_stored():
    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"), ("correct",))]
    rows = make_results(conditions, MODEL, 6, _level(0.5), seed=1)
    draws = all_curve_draws(rows, list(MODEL), STATS, n_resamples=50, sample_stats=("frobenius",))
    found = checks.run_checks(draws, ["A1"], extra={checks.STORE: "results/original"})
    assert {(f.scope, f.pooled) for f in found} == {("aqua", False), ("gsm8k", False), ("math_reasoning", True)}
    for finding in found:
        assert finding.verdict == NOT_APPLICABLE and finding.parts == ()
        assert finding.not_applicable.why is Why.NOT_STORED
        assert voice.numbers(finding).startswith(averaging.TOKENS_UNKNOWN)
        assert "`python -m analysis add-token-counts --store results/original --model m`" in voice.numbers(finding)
    # with R stored the same curves give A1's parts; without the Frobenius norm A1 is not about R: no cell
    with_r = all_curve_draws(rows, list(MODEL), STATS, n_resamples=50, sample_stats=("frobenius", "n_response_tokens"))
    assert all(f.parts and f.verdict != NOT_APPLICABLE for f in checks.run_checks(with_r, ["A1"]))
    assert checks.run_checks(all_curve_draws(rows, list(MODEL), STATS, n_resamples=50), ["A1"]) == []
    # R stored as missing (a model imported without its tokenizer, beside one with R): the same cells
    unknown = rows.assign(n_response_tokens=np.nan)
    stats = ("frobenius", "n_response_tokens", "loss")
    draws = all_curve_draws(unknown, list(MODEL), STATS, n_resamples=50, sample_stats=stats)
    assert ("aqua/none/correct", "q", "n_response_tokens") not in draws["m"].samples
    unknown_cells = checks.run_checks(draws, ["A1"])
    assert [f.not_applicable.reason for f in unknown_cells] == [averaging.TOKENS_UNKNOWN] * 3
    assert all(voice.numbers(f).startswith(averaging.TOKENS_UNKNOWN) for f in unknown_cells)


def test_the_matrix_says_which_checks_lack_r_and_the_command():
    from analysis.findings.rules import Finding
    from analysis.report import verdicts

    reason = NotApplicable(Why.NOT_STORED, averaging.TOKENS_UNKNOWN, "the store holds no R")
    found = [
        Finding("A1", "m", "aqua", False, (), not_applicable=reason),
        Finding("A1", "m", "gsm8k", False, (), not_applicable=reason),
    ]
    assert "A1 is not computed (token counts unknown)" in verdicts.plain_summary(found)
    sentence = verdicts.unknown_sentence(found, "results/original")
    assert sentence.startswith("**Token counts unknown:** A1 is not computed for m")
    assert "`python -m analysis add-token-counts --store results/original --model m`" in sentence
    assert verdicts.unknown_sentence([], "x") == ""
    assert "**A1** not computed: token counts unknown; the store holds no R." in verdicts.model_paragraph(found, "m")


def test_the_chapter_splits_the_gaps_and_states_a1_and_g1_from_the_store(tmp_path, study_data_dir):
    from synthetic import MODELS, record_run, write_store

    from analysis.report import gap_sources
    from analysis.report.page import Page

    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"))]
    rows = make_results(conditions, MODELS, 8, _level(0.5), sample_sd=0.2, length_exponent=-0.5, seed=2)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    page = Page.open(checks.GAP_CHAPTER, given, stats=("nuclear_norm",))
    assert set(page.checks()) == {"A1", "G1", "A2", "A3", "A4", "A5"}
    table = gap_sources.decomposition(page, "F1")
    assert set(table["model"]) == set(MODELS) and set(averaging.STACKED) <= set(table["term"])
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    assert np.allclose(wide[list(averaging.STACKED)].sum(axis=1), wide[averaging.LOG_NUCLEAR])
    split = gap_sources.decomposition_section(page, "F1")
    returned = split + gap_sources.verdicts(page)
    text = "\n".join(_said(returned))
    pooled = [f for f in page.findings(["A1"]) if f.pooled]
    assert len(pooled) == len(MODELS) and f"A1 **{pooled[0].verdict}**" in text
    assert "averaging alone predicts" in text and "G1 **" in text and gap_sources.no_energy(list(MODELS)) in text
    assert gap_sources.ENERGY_COMMAND in text
    # A1 in the Frobenius norm it decides on and in F1's nuclear norm beside it
    assert "in the Frobenius norm" in text and "in F1's nuclear norm" in text
    assert voice.sized(pooled[0].part(roles.NUCLEAR_BEYOND_AVERAGING)) in text
    # the means over layers: the gaps and the parts in two tables narrow enough for the page
    gaps, parts = tables_of(split)[:2]
    assert list(gaps.columns) == ["model", averaging.LOG_NUCLEAR, averaging.LOG_FROBENIUS, averaging.SCALED_NUCLEAR]
    labels = {gap_sources.TERM_LABELS[t] for t in averaging.STACKED}
    assert labels <= set(parts.columns) and len(parts.columns) <= 6 and len(gaps) == len(parts) == len(MODELS)
    # a run without a loss screen says nothing of one; with one, the chapter tabulates it
    assert "The loss screen" not in text and gap_sources.screen_blocks(page) == []
    model = next(iter(MODELS))
    entries = [Screened(100, 1.0, 1.1), Screened(101, 1.0, 3.0), Screened(102, None, 2.0, "correct: truncated")]
    screens.record(root, Screen(model, DATASETS[0], "instruct", 1024, 0.25, 5, 3, 40, 8, 0, entries))
    screened = gap_sources.screen_blocks(Page.open(checks.GAP_CHAPTER, given, stats=("nuclear_norm",)))
    assert "**The loss screen.**" in _said(screened)[0]
    table = tables_of(screened)[0]
    assert table[["model", "dataset", "screened", "skipped", "screened matched", "stopped"]].values.tolist() == [
        [model, DATASETS[0], 3, 1, 1, screens.BUDGET]
    ]


def _with_energy(rows, seed: int = 0, models=None, datasets=None):
    """The rows with a token energy E = R^2 ||G||_F^2 / kappa, kappa = R^u per sample (u uniform in
    [0, 1]: between orthogonal and identical token gradients), for ``models`` and ``datasets`` (None: all)."""
    rng = np.random.default_rng(seed)
    keys = rows[["model", "condition", "sample_index"]].drop_duplicates()
    u = dict(zip(map(tuple, keys.to_numpy()), rng.uniform(0, 1, len(keys))))
    power = np.array([u[k] for k in map(tuple, rows[["model", "condition", "sample_index"]].to_numpy())])
    tokens = rows["n_response_tokens"].to_numpy(dtype=float)
    energy = tokens**2 * rows["frobenius"].to_numpy() ** 2 / tokens**power
    chosen = np.ones(len(rows), dtype=bool)
    if models is not None:
        chosen &= rows["model"].isin(models).to_numpy()
    if datasets is not None:
        chosen &= rows["dataset"].isin(datasets).to_numpy()
    rows["token_energy"] = np.where(chosen, energy, np.nan)
    return rows, dict(zip(u, u.values()))


def test_token_terms_split_the_rest_exactly():
    rng = np.random.default_rng(0)
    log_f, log_n, log_r = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)) + 2, np.log(rng.integers(1, 300, 5))
    log_e = 2 * log_f + log_r[:, None] + rng.uniform(0, 1, (5, 1)) * 0.0
    terms = averaging.token_terms(log_f, log_n, log_r, log_e)
    assert np.allclose(terms[averaging.TOKEN_SIZE] + terms[averaging.ALIGNMENT], terms[averaging.REST], atol=1e-12)
    assert np.allclose(terms[averaging.TOKEN_SIZE], 0.5 * (log_e - log_r[:, None]))
    assert np.allclose(sum(terms[t] for t in averaging.STACKED_WITH_ENERGY), log_n)
    assert averaging.TOKEN_SIZE not in averaging.token_terms(log_f, log_n, log_r)


def _energy_page(tmp_path, study_data_dir, **chosen):
    from synthetic import MODELS, record_run, write_store

    from analysis.report.page import Page

    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"))]
    rows = make_results(conditions, MODELS, 8, _level(0.5), sample_sd=0.2, length_exponent=-0.5, seed=2)
    rows, powers = _with_energy(rows, **chosen)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    return Page.open(checks.GAP_CHAPTER, given, stats=("nuclear_norm",)), rows, powers


def _said(blocks) -> list[str]:
    """What a reader reads of ``blocks``: each Markdown text, and each figure's alternative text (or
    the line shown where it has none)."""
    return [b.text for b in walk(blocks) if isinstance(b, Markdown)] + [
        b.alt if b.figure is not None else b.empty for b in walk(blocks) if isinstance(b, Figure)
    ]


def _shown(page, contrast: str = "F1") -> list[str]:
    from analysis.report import gap_sources

    return _said(gap_sources.decomposition_section(page, contrast))


@pytest.mark.parametrize("contrast", ["F1", "F3"])
def test_with_the_token_energy_the_gap_is_four_parts_that_add_up_to_it(tmp_path, study_data_dir, contrast):
    from synthetic import MODELS

    from analysis.report import gap_sources

    page, rows, powers = _energy_page(tmp_path, study_data_dir)
    table = gap_sources.decomposition(page, contrast)
    assert set(table["model"]) == set(MODELS) and set(averaging.STACKED_WITH_ENERGY) <= set(table["term"])
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    parts = wide[list(averaging.STACKED_WITH_ENERGY)].sum(axis=1)
    assert np.allclose(parts, wide[averaging.LOG_NUCLEAR], rtol=0, atol=1e-12)
    assert np.allclose(wide[averaging.TOKEN_SIZE] + wide[averaging.ALIGNMENT], wide[averaging.REST], atol=1e-12)
    # alignment is 1/2 log kappa = u/2 log R per sample: its gap is known from the rows
    (first, second) = averaging.conditions_of(*gap_sources.CONTRASTS[contrast][0], "aqua")
    model = next(iter(MODELS))
    samples = rows[(rows["model"] == model) & (rows["layer"] == 0) & (rows["proj"] == "q")]
    half_log_kappa = {
        c: np.mean(
            [
                0.5 * powers[(model, c, i)] * np.log(r)
                for i, r in samples.loc[samples["condition"] == c, ["sample_index", "n_response_tokens"]].to_numpy()
            ]
        )
        for c in (first, second)
    }
    expected = half_log_kappa[first] - half_log_kappa[second]
    assert np.allclose(wide.loc[(model, "aqua"), averaging.ALIGNMENT], expected, atol=1e-9)
    text = "\n".join(_shown(page, contrast))
    assert "averaging, token size, alignment and shape" in text and "no token energy" not in text


def test_a_model_without_the_energy_everywhere_keeps_three_parts_and_is_named(tmp_path, study_data_dir):
    from synthetic import MODELS

    from analysis.report import gap_sources

    first, other = MODELS
    page, _, _ = _energy_page(tmp_path, study_data_dir, models=[first])
    table = gap_sources.decomposition(page, "F1")
    assert gap_sources.split_models(table) == [first]
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    for model in MODELS:  # each model's stacked parts add up to its gap
        terms = averaging.stacked_terms(table.loc[table["model"] == model, "term"].unique())
        assert np.allclose(wide.loc[model, list(terms)].sum(axis=1), wide.loc[model, averaging.LOG_NUCLEAR])
    assert gap_sources.no_energy([other]) in _shown(page)
    # a model holding it for one dataset of two: the mean over datasets is not split
    page, _, _ = _energy_page(tmp_path / "one", study_data_dir, models=[first], datasets=[DATASETS[0]])
    table = gap_sources.decomposition(page, "F1")
    assert gap_sources.split_models(table) == []
    assert gap_sources.no_energy(list(MODELS)) in _shown(page)


def test_a1_shows_token_size_and_alignment_where_the_energy_is_stored(tmp_path, study_data_dir):
    page, _, _ = _energy_page(tmp_path, study_data_dir)
    found = page.findings(["A1"])
    names = {p.name for f in found for p in f.parts}
    assert {averaging.TOKEN_SIZE_PART, averaging.ALIGNMENT_PART, averaging.A1_PART} <= names
    assert all(f.part(roles.TOKEN_SIZE) is not None and f.part(roles.ALIGNMENT) is not None for f in found)
    assert len(found) and all(isinstance(f.verdict, Verdict) for f in found)
    from analysis.report import gap_sources

    assert "(token size " in gap_sources.a1_paragraph(found)


def test_a_zero_token_energy_leaves_one_sample_out_of_the_split_not_the_condition(tmp_path, study_data_dir):
    from synthetic import MODELS, record_run, write_store

    from analysis.findings import energy_noise
    from analysis.report import gap_sources
    from analysis.report.page import Page

    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"))]
    rows = make_results(conditions, MODELS, 8, _level(0.5), sample_sd=0.2, length_exponent=-0.5, seed=2)
    rows, _ = _with_energy(rows)
    model, condition = next(iter(MODELS)), "/".join(conditions[1])
    zero = (rows["model"] == model) & (rows["condition"] == condition) & (rows["sample_index"] == 0)
    rows.loc[zero & (rows["layer"] == 1) & (rows["proj"] == "k"), "token_energy"] = 0.0
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    page = Page.open(checks.GAP_CHAPTER, given, stats=("nuclear_norm",))
    terms = averaging.log_terms(page.draws[model], condition)
    size = terms.terms[averaging.TOKEN_SIZE]
    assert np.isnan(size).all(axis=1).sum() == 1 and np.isfinite(size).all(axis=1).sum() == len(size) - 1
    assert model in gap_sources.split_models(gap_sources.decomposition(page, "F1"))
    table = energy_noise.energy_noise_table(page.results.rows, passes=4)
    left_out = table.set_index(["model", "condition"])["zero or not finite"]
    assert left_out[(model, condition)] == 1 and left_out.sum() == 1


def _simulated_log_bias(*, directions: int, tokens_per_direction: int, passes: int, draws: int, seed: int) -> float:
    """The mean of log(E^ / E) over random-sign estimates of K passes, for token gradients of equal
    size spread evenly over orthogonal directions."""
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(draws, passes, directions, tokens_per_direction))
    per_pass = (signs.sum(axis=3) ** 2).sum(axis=2) / (directions * tokens_per_direction)
    return float(np.log(per_pass.mean(axis=1)).mean())


def test_the_log_bias_of_the_random_sign_estimate_matches_a_simulation_and_its_bounds():
    from scipy.special import digamma

    from analysis.findings import energy_noise

    passes = 4
    for directions in (1, 3):
        tokens = 40  # per direction: relative variance 2 (1 - 1/m) / (K d)
        expected = energy_noise.log_bias(2 * (1 - 1 / tokens) / (passes * directions), passes=passes)
        simulated = _simulated_log_bias(
            directions=directions, tokens_per_direction=tokens, passes=passes, draws=4000, seed=directions
        )
        assert abs(simulated - expected) < 0.02, (directions, simulated, expected)
    worst = digamma(passes / 2) - np.log(passes / 2)
    assert np.isclose(energy_noise.log_bias(np.array([5.0]), passes=passes)[0], worst)  # clipped at 2 / K
    assert energy_noise.log_bias(np.array([0.0]), passes=passes)[0] == 0.0
    small = np.array([1e-3])
    assert np.isclose(energy_noise.log_bias(small, passes=passes)[0], -small[0] / 2, rtol=0.01)  # second order
