"""Fast thinking's gap split exactly into four steps: the phrase, the reasoning, which tokens, how many
tokens (``findings.gap_split``), and the check that declares the split drawn by ``report.chain``."""

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic import SPLIT_SHIFT as SHIFT
from synthetic import SPLIT_TRUE as TRUE
from synthetic import chain_rows, record_run, write_store

from analysis import checks
from analysis.checks import s_gap_split
from analysis.cli import split_commands as split_command
from analysis.cli.main import main
from analysis.findings import gap_split, quantities
from analysis.findings.bootstrap import all_curve_draws, pooled
from analysis.report import chain, voice

ROOT = Path(__file__).resolve().parents[1]
MODEL = "m"
MODELS = {MODEL: ("base", 12)}
STEPS = [s.name for s in gap_split.STEPS]
CHECK = s_gap_split.CHECK
NUCLEAR, FROBENIUS = "nuclear norm", "Frobenius norm"


def curves(rows, n_resamples=300):
    stats = ("nuclear_norm", "frobenius")
    return all_curve_draws(
        rows, [MODEL], stats, n_resamples=n_resamples, sample_stats=(gap_split.TOKENS, gap_split.LOSS)
    )


def split_table(draws, norm=NUCLEAR):
    """The chain's long table of S's findings on ``draws``, in one norm."""
    found = checks.run_checks(draws, [CHECK.id])
    frame = chain.table(found, CHECK)
    return frame[frame["norm"] == norm]


def rows_of(frame, scope):
    return {r.step: r for r in frame[frame["scope"] == scope].itertuples()}


def test_the_steps_add_up_to_f1_recomputed_on_the_same_instructions():
    rows = chain_rows()
    skipped = (rows["setting"] == "detailed_answer") & rows["sample_index"].isin([1, 4])  # too long
    rows = rows[~skipped].reset_index(drop=True)
    found = gap_split.dataset_split(curves(rows)[MODEL], "gsm8k")
    total = found[gap_split.TOTAL]
    assert sum(found[s].value for s in STEPS) == pytest.approx(total.value, abs=1e-9)
    assert np.allclose(sum(found[s].draws for s in STEPS), total.draws, atol=1e-9)
    # F1's own gap (quantities.log_gap) on the rows of the instructions every condition holds
    shared = rows[~rows["sample_index"].isin([1, 4])]
    f1 = quantities.log_gap(curves(shared)[MODEL], "gsm8k", "none", "detailed")
    assert total.value == pytest.approx(f1.value, abs=1e-9) and total.n == f1.n == 6
    on_all = quantities.log_gap(curves(rows)[MODEL], "gsm8k", "none", "detailed")
    assert abs(on_all.value - total.value) > 1e-6  # the instructions the split drops change F1's number


def test_each_step_estimates_its_own_difference_of_conditions():
    frame = split_table(curves(chain_rows(n=10, sample_sd=0.1)))
    found = rows_of(frame, "gsm8k")
    for step, true in TRUE.items():
        assert found[step].estimate == pytest.approx(true, abs=0.15)
        assert found[step].low < true < found[step].high
    share = chain.shares(frame, CHECK).set_index(["scope", "step"])["share"]
    assert share[("gsm8k", "how many tokens")] == pytest.approx(0.7, abs=0.05)
    assert found["how many tokens"].decided and found["the phrase"].decided and found[CHECK.chain.total_name].decided


def test_dropped_instructions_are_counted_per_condition():
    rows = chain_rows()
    too_long = (rows["setting"] == "detailed_answer") & rows["sample_index"].isin([1, 4])
    absent = (rows["setting"] == "none_answer") & (rows["sample_index"] == 6)
    zero = (rows["setting"] == "detailed_scored_answer") & (rows["sample_index"] == 7) & (rows["proj"] == "q")
    rows.loc[zero & (rows["layer"] == 3), "nuclear_norm"] = 0.0  # a zero gradient in one layer
    draws = curves(rows[~(too_long | absent)])
    counts = {d.condition: (d.dropped, d.of) for d in gap_split.dropped(draws[MODEL])}
    assert counts == {
        "none": (0, 8),
        "none_answer": (1, 8),
        "detailed_answer": (2, 8),
        "detailed_matched_answer": (0, 8),
        "detailed_scored_answer": (1, 8),
        "detailed": (0, 8),
    }
    assert gap_split.dataset_split(draws[MODEL], "gsm8k")[gap_split.TOTAL].n == 4
    assert set(chain.dropped(draws, CHECK)["condition"]) == {"none_answer", "detailed_answer", "detailed_scored_answer"}


def test_the_family_mean_is_the_mean_of_its_dataset_means_with_within_dataset_intervals():
    opposite = {**SHIFT, "none_answer": 2.0 + 0.8, "detailed_answer": 1.2}  # the phrase -0.8, the reasoning 1.6
    rows = chain_rows(("aqua", "gsm8k"), n=10, shift={"aqua": SHIFT, "gsm8k": opposite}, sample_sd=0.1)
    draws = curves(rows)
    frame = split_table(draws)
    family, aqua, gsm8k = (rows_of(frame, s) for s in ("math_reasoning", "aqua", "gsm8k"))
    for step in (CHECK.chain.total_name, *STEPS):
        assert family[step].pooled
        assert family[step].estimate == pytest.approx((aqua[step].estimate + gsm8k[step].estimate) / 2)
    phrase = family["the phrase"]
    said = f"aqua {aqua['the phrase'].estimate:+.3g} (10 instructions), gsm8k {gsm8k['the phrase'].estimate:+.3g}"
    assert phrase.note.startswith("datasets on opposite sides of 0: " + said)
    assert family["how many tokens"].note == ""
    # the datasets disagree far beyond their noise: the family's interval is still their own noise's,
    # the study's pooled one (the mean of the datasets named, conditional on them)
    splits = [gap_split.dataset_split(draws[MODEL], d) for d in ("aqua", "gsm8k")]
    study = pooled([s["the phrase"] for s in splits])
    assert (phrase.low, phrase.high) == pytest.approx(study.interval())
    assert phrase.low < -0.15 < phrase.high  # the mean of 0.5 and -0.8
    backwards = {**SHIFT, "detailed_answer": SHIFT["none_answer"] + 1.0}  # gsm8k's reasoning step -1
    rows = chain_rows(("aqua", "gsm8k"), n=10, shift={"aqua": SHIFT, "gsm8k": backwards}, sample_sd=0.1)
    family = rows_of(split_table(curves(rows)), "math_reasoning")
    assert family["the reasoning"].outcome == "the datasets disagree"  # aqua +0.3 larger, gsm8k -1.0 smaller


def test_a_family_needs_two_datasets_and_a_dataset_without_a_condition_has_no_split():
    rows = chain_rows(("aqua", "gsm8k"))
    lacking = (rows["dataset"] == "gsm8k") & (rows["setting"] == "detailed_scored_answer")
    cd = curves(rows[~lacking])[MODEL]
    assert set(split_table({MODEL: cd})["scope"]) == {"aqua"}
    assert gap_split.missing_conditions(cd) == ["gsm8k/detailed_scored_answer/correct"]


def test_the_frobenius_split_sets_the_averaging_step_beside_what_averaging_predicts():
    """Norms that fall as 1/sqrt(R) and nothing else: the averaging step is what averaging predicts."""
    flat = dict.fromkeys(gap_split.CHAIN, 0.0)
    rows = chain_rows(n=10, shift=flat, length_exponent=-0.5, sample_sd=0.0)
    found = gap_split.dataset_split(curves(rows)[MODEL], "gsm8k", stat="frobenius")
    step, predicted = found["how many tokens"], found[gap_split.PREDICTED]
    assert predicted.value > 1.0 and step.value == pytest.approx(predicted.value, abs=0.02)
    shares = gap_split.shares(found)
    assert shares["how many tokens"].value == pytest.approx(shares[gap_split.PREDICTED].value, abs=0.02)
    assert gap_split.PREDICTED not in gap_split.dataset_split(curves(rows)[MODEL], "gsm8k")  # nuclear: not shown
    table = split_table(curves(rows), FROBENIUS)
    assert gap_split.PREDICTED in set(table["step"])  # the check's own Frobenius parts


def test_the_step_intervals_cover_the_true_step():
    reps, covered = 30, 0
    for seed in range(reps):
        found = gap_split.dataset_split(curves(chain_rows(n=6, seed=seed), n_resamples=200)[MODEL], "gsm8k")
        low, high = found["the reasoning"].interval()
        covered += low < TRUE["the reasoning"] < high
    assert covered / reps >= 0.8  # 95% intervals: fewer than 24 of 30 has a chance of 0.3%


def test_the_split_refuses_another_statistic_and_steps_that_do_not_link_up():
    with pytest.raises(ValueError, match="nuclear_norm or frobenius"):
        gap_split.dataset_split(curves(chain_rows())[MODEL], "gsm8k", stat="sigma_max")
    assert split_command.STATS == gap_split.STATS
    with pytest.raises(ValueError, match="starts at 'detailed_answer', not where 'the phrase' ends"):
        gap_split.chain_of((gap_split.PHRASE, gap_split.WHICH_TOKENS))
    assert gap_split.chain_of(gap_split.STEPS) == gap_split.CHAIN


def stored(tmp_path, rows):
    root = write_store(tmp_path, rows.assign(model="gemma-3-270m"))
    record_run(root, ["gemma-3-270m"], sorted(set(rows["condition"])), n_resamples=200)
    return root


def test_the_split_command_prints_the_table_and_its_json(tmp_path, capsys):
    root = stored(tmp_path, chain_rows(("aqua", "gsm8k")))
    assert main(["split", str(root)]) == 0
    out = capsys.readouterr().out
    assert all(c in out.splitlines()[0] for c in (*split_command.COLUMNS, "outcome"))
    assert "larger" in out  # what each row's interval decides
    assert "math_reasoning" in out and "how many tokens" in out and "No condition dropped an instruction." in out
    assert main(["split", str(root), "--stat", "frobenius", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    table = pd.DataFrame(payload["rows"])
    assert payload["stat"] == "frobenius" and gap_split.PREDICTED in set(table["step"])
    assert set(table["scope"]) == {"math_reasoning", "aqua", "gsm8k"}


def test_the_split_command_names_the_missing_conditions_and_the_command_once(tmp_path, capsys):
    rows = chain_rows(("aqua", "gsm8k"))
    lacking = rows["setting"].isin(["none_answer", "detailed_scored_answer"]) & (rows["dataset"] == "gsm8k")
    root = stored(tmp_path, rows[~lacking])
    assert main(["split", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "gemma-3-270m: gsm8k/none_answer/correct, gsm8k/detailed_scored_answer/correct" in err[0]
    command = "python -m analysis extract --model gemma-3-270m --data gsm8k/none_answer/correct "
    assert command + f"gsm8k/detailed_scored_answer/correct --out {root}" in err[0]


def test_the_split_command_says_when_the_store_holds_no_frobenius_norm(tmp_path, capsys):
    root = stored(tmp_path, chain_rows(("aqua", "gsm8k")).assign(frobenius=np.nan))
    assert main(["split", str(root), "--stat", "frobenius"]) == 2
    assert "holds no Frobenius norm (frobenius)" in capsys.readouterr().err


class DrawsPage:
    """What ``chain.blocks`` and ``chain.tables`` read of a page: its draws, findings and note."""

    def __init__(self, draws):
        self.draws = draws

    def findings(self, ids=None):
        return checks.run_checks(self.draws, ids or [CHECK.id])

    def note(self):
        return "synthetic numbers"


def test_the_figure_draws_from_a_synthetic_store_without_warnings(tmp_path):
    import matplotlib.pyplot as plt

    root = stored(tmp_path, chain_rows(("aqua", "gsm8k", "strategyqa", "ecqa")))
    frame = chain.load_chain(root, CHECK).table
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = chain.figure(frame, CHECK, note="synthetic numbers")
    try:
        assert [ax.get_title().split("\n")[1] for ax in fig.axes] == [
            "math reasoning",
            "commonsense reasoning",
        ]
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert re.fullmatch(r"F1's gap\nx[\d.]+ \[x[\d.]+, x[\d.]+\]", labels[0])  # a ratio, in times
        assert len(labels) == 1 + len(gap_split.STEPS) and all("[" in label for label in labels)
    finally:
        plt.close(fig)
    caption = chain.caption(CHECK)
    assert "add up to it exactly" in caption and "95%" in caption


def test_the_first_page_shows_the_split_s_figure_after_the_abstract_and_the_claims():
    import matplotlib.pyplot as plt

    from analysis.report.blocks import Figure, Fold

    page = DrawsPage(curves(chain_rows(("aqua", "gsm8k", "strategyqa", "ecqa"), sample_sd=0.1)))
    blocks = chain.blocks(page, CHECK)
    try:
        assert [type(b) for b in blocks] == [Figure, Fold]
        assert blocks[1].blocks[0].text == chain.caption(CHECK)
    finally:
        plt.close(blocks[0].figure)
    lacking = chain_rows()
    assert chain.blocks(DrawsPage(curves(lacking[lacking["setting"] != "none_answer"])), CHECK) == []
    intro = (ROOT / "notebooks" / "intro.py").read_text()
    assert (
        intro.index("sections.opening(page)")
        < intro.index("sections.claims_table(page)")
        < intro.index("sections.split(page)")
    )


def test_the_gap_chapter_shows_the_split_per_dataset_in_both_norms():
    """The chapter's tables (``chain.tables``): the nuclear norm shown, each step with what its
    interval decides; the Frobenius norm folded, with what averaging alone predicts."""
    from analysis.report.blocks import Fold, Markdown, Table

    rows = chain_rows(("aqua", "gsm8k"), n=10, sample_sd=0.1).assign(n_response_tokens=5)
    shown = chain.tables(DrawsPage(curves(rows)), CHECK)
    assert [type(b) for b in shown] == [Markdown, Table, Markdown, Fold]
    nuclear = shown[1].table.set_index("scope")
    assert list(nuclear.index) == ["math reasoning", "aqua", "gsm8k"]
    assert nuclear.loc["gsm8k", "how many tokens"].endswith(" larger")
    assert list(nuclear["instructions per dataset"]) == ["10"] * 3  # a family counted per dataset too
    # how many step intervals are printed, what chance alone would give, and Holm over the family steps
    said = shown[2].text
    assert said.startswith("These tables print 30 step intervals (per dataset and family, in two norms).")
    assert "family steps called larger or smaller stay so" in said
    (frobenius,) = shown[3].blocks
    assert gap_split.PREDICTED in frobenius.table.columns
    lacking = DrawsPage(curves(chain_rows()[lambda r: r["setting"] != "none"]))
    assert chain.tables(lacking, CHECK)[0].text.startswith("No dataset holds")


def test_each_step_s_line_on_its_scored_tokens_loss_gives_the_step_at_equal_loss():
    """A step that is its scored tokens' loss gap times 0.75 plus 0.2: the line's intercept is 0.2 (the
    step where both sides' tokens are equally surprising) and its slope 0.75; S shows both beside."""
    rows = chain_rows(n=12, sample_sd=0.03)
    rng = np.random.default_rng(3)
    loss_gap = dict(enumerate(rng.normal(0.0, 1.0, 12)))
    step = gap_split.EQUAL_LOSS
    fast, slow = (rows["setting"] == step.fast), (rows["setting"] == step.slow)
    rows.loc[fast, "loss"] = np.exp(rows.loc[fast, "sample_index"].map(loss_gap))
    rows.loc[slow, "loss"] = 1.0
    # the step per instruction: 0.2 + 0.75 x, on top of the condition's level
    own = rows.loc[fast, "sample_index"].map(lambda i: 0.75 * loss_gap[i])
    for column in ("nuclear_norm", "frobenius"):
        rows.loc[fast, column] *= np.exp(own + 0.2 - TRUE[step.name])
    draws = curves(rows)
    intercept, slope = gap_split.loss_line(draws[MODEL], "gsm8k", step)
    assert intercept.value == pytest.approx(0.2, abs=0.05) and slope.value == pytest.approx(0.75, abs=0.05)
    low, high = intercept.interval()
    assert low < 0.2 < high
    every = checks.run_checks(draws, [CHECK.id])
    found = every[0]
    shown = found.part(s_gap_split.LOSS_INTERCEPT, facet=(step.name,))
    assert shown is not None and shown.value == pytest.approx(intercept.value) and not shown.decides
    # the chapter's table of the lines, and the step by design against the span's line by regression
    lines = chain.loss_table(every, CHECK).set_index("step")
    assert lines.loc[step.name, "at equal loss"] == voice.sized(shown)
    assert chain.design_against_line(every, CHECK)[0] == 1  # one model and dataset cell holds both
    # the same losses on both sides for every instruction: no line to fit
    assert gap_split.loss_line(curves(chain_rows(n=12))[MODEL], "gsm8k", step) is None


def test_the_chain_shows_which_tokens_and_which_tokens_and_how_many_beside_the_steps():
    found = gap_split.dataset_split(curves(chain_rows(n=10, sample_sd=0.1))[MODEL], "gsm8k")
    which = found[gap_split.EQUAL_LOSS.name].value + found[gap_split.SURPRISE.name].value
    assert found[gap_split.WHICH_TOKENS.name].value == pytest.approx(which)
    together = which + found[gap_split.HOW_MANY.name].value
    assert found[gap_split.TOGETHER.name].value == pytest.approx(together)


def test_the_deciding_run_s_goals_count_the_new_steps_intervals_and_means():
    from analysis.profiles import ResolutionGoals
    from analysis.report.reproducibility import goals_text

    quiet = checks.run_checks(curves(chain_rows(("aqua", "gsm8k"), n=12, sample_sd=0.05)), [CHECK.id])
    goals = ResolutionGoals(step_half_width=0.35, mean_half_width=0.15, design_inside=10 / 12)
    said = goals_text(quiet, CHECK, goals)
    assert "which tokens at equal loss and how surprising narrower than ±0.35 (4 of 4; met)" in said
    assert "narrower than ±0.15 (2 of 2; met)" in said
    noisy = checks.run_checks(curves(chain_rows(("aqua", "gsm8k"), n=5, sample_sd=1.0)), [CHECK.id])
    assert "(0 of 4; not met)" in goals_text(noisy, CHECK, goals)
