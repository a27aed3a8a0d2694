"""F1's and F3's gaps split per layer on synthetic results whose truth is known, the error rates of
A3 and G1 where their claims are false (G1 itself: test_beyond_loss.py), and the chapter that states
them."""

import numpy as np
import pytest
from blocks_read import tables_of, walk
from synthetic import make_results, reasoning_conditions

from analysis import checks
from analysis.extract import screens
from analysis.extract.screens import Screen, Screened
from analysis.findings import averaging
from analysis.findings.rules import NotApplicable, Why
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


def test_the_matrix_says_which_checks_lack_r_and_the_command():
    from analysis.findings.rules import Finding
    from analysis.report import verdicts

    reason = NotApplicable(Why.NOT_STORED, averaging.TOKENS_UNKNOWN, "the store holds no R")
    found = [
        Finding("S", "m", "aqua", False, (), not_applicable=reason),
        Finding("S", "m", "gsm8k", False, (), not_applicable=reason),
    ]
    assert "S is not computed (token counts unknown)" in verdicts.plain_summary(found)
    sentence = verdicts.unknown_sentence(found, "results/original")
    assert sentence.startswith("**Token counts unknown:** S is not computed for m")
    assert "`python -m analysis add-token-counts --store results/original --model m`" in sentence
    assert verdicts.unknown_sentence([], "x") == ""
    assert "**S** not computed: token counts unknown; the store holds no R." in verdicts.model_paragraph(found, "m")


def test_the_chapter_splits_the_gaps_and_states_g1_from_the_store(tmp_path, study_data_dir):
    from synthetic import MODELS, record_run, write_store

    from analysis.report import check_sections, gap_sources
    from analysis.report.page import Page

    conditions = [c for d in DATASETS for c in reasoning_conditions(d, ("none", "detailed"))]
    rows = make_results(conditions, MODELS, 8, _level(0.5), sample_sd=0.2, length_exponent=-0.5, seed=2)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    page = Page.open(checks.GAP_CHAPTER, given, stats=("nuclear_norm",))
    assert set(page.checks()) == {"S", "G1", "A3", "A5"}
    table = gap_sources.decomposition(page, checks.get("F1"))
    assert set(table["model"]) == set(MODELS) and set(averaging.STACKED) <= set(table["term"])
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    assert np.allclose(wide[list(averaging.STACKED)].sum(axis=1), wide[averaging.LOG_NUCLEAR])
    split = gap_sources.decomposition_section(page, checks.get("F1"))
    returned = split + check_sections.check_sections(page)
    text = "\n".join(_said(returned))
    assert "G1 **" in text and gap_sources.no_energy(list(MODELS)) in text
    assert gap_sources.ENERGY_COMMAND in text
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

    return _said(gap_sources.decomposition_section(page, checks.get(contrast)))


@pytest.mark.parametrize("contrast", ["F1", "F3"])
def test_with_the_token_energy_the_gap_is_four_parts_that_add_up_to_it(tmp_path, study_data_dir, contrast):
    from synthetic import MODELS

    from analysis.report import gap_sources

    page, rows, powers = _energy_page(tmp_path, study_data_dir)
    table = gap_sources.decomposition(page, checks.get(contrast))
    assert set(table["model"]) == set(MODELS) and set(averaging.STACKED_WITH_ENERGY) <= set(table["term"])
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    parts = wide[list(averaging.STACKED_WITH_ENERGY)].sum(axis=1)
    assert np.allclose(parts, wide[averaging.LOG_NUCLEAR], rtol=0, atol=1e-12)
    assert np.allclose(wide[averaging.TOKEN_SIZE] + wide[averaging.ALIGNMENT], wide[averaging.REST], atol=1e-12)
    # alignment is 1/2 log kappa = u/2 log R per sample: its gap is known from the rows
    (first, second) = averaging.conditions_of(*checks.get(contrast).layer_split.contrast, "aqua")
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
    table = gap_sources.decomposition(page, checks.get("F1"))
    assert gap_sources.split_models(table) == [first]
    wide = table.pivot_table(index=["model", "dataset", "layer"], columns="term", values="value")
    for model in MODELS:  # each model's stacked parts add up to its gap
        terms = averaging.stacked_terms(table.loc[table["model"] == model, "term"].unique())
        assert np.allclose(wide.loc[model, list(terms)].sum(axis=1), wide.loc[model, averaging.LOG_NUCLEAR])
    assert gap_sources.no_energy([other]) in _shown(page)
    # a model holding it for one dataset of two: the mean over datasets is not split
    page, _, _ = _energy_page(tmp_path / "one", study_data_dir, models=[first], datasets=[DATASETS[0]])
    table = gap_sources.decomposition(page, checks.get("F1"))
    assert gap_sources.split_models(table) == []
    assert gap_sources.no_energy(list(MODELS)) in _shown(page)


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
    assert model in gap_sources.split_models(gap_sources.decomposition(page, checks.get("F1")))
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
