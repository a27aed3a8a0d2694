import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from analysis.metrics import layer_curves
from analysis.plots import (condition_title, effective_rank_figure, length_scatter, model_grid,
                            nuclear_norm_figure)
from analysis.stats import curve_band_table, per_sample_means
from synthetic import make_results, reasoning_conditions

CONDITIONS = ["aqua/none/correct", "aqua/simplified/correct", "aqua/detailed/correct"]


@pytest.fixture(scope="module")
def results():
    return make_results(reasoning_conditions("aqua"), n_samples=4)


@pytest.fixture(scope="module")
def curves(results):
    return pd.concat([layer_curves(results, s)
                      for s in ("nuclear_norm", "sigma1_ratio", "effective_rank")])


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_nuclear_norm_figure_grid_and_lines(curves):
    fig = nuclear_norm_figure(curves, "base-model", CONDITIONS, note="synthetic numbers")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2 * 3
    for ax in fig.axes:
        assert [line.get_label() for line in ax.get_lines()] == ["Q", "K", "V", "O"]
        assert [line.get_color() for line in ax.get_lines()] == ["r", "g", "b", "gray"]
    assert fig.axes[0].get_title() == "aqua: None CoT"
    assert fig.axes[3].get_ylabel() == "s1 / nuclear norm"
    assert any(t.get_text() == "synthetic numbers" for t in fig.texts)


def test_nuclear_norm_figure_bands(results, curves):
    bands = curve_band_table(results[results.condition.isin(CONDITIONS)], n_resamples=100)
    fig = nuclear_norm_figure(curves, "base-model", CONDITIONS, stats=("nuclear_norm",),
                              bands=bands)
    assert len(fig.axes) == 3
    for ax in fig.axes:
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 4


def test_effective_rank_figure_and_missing_condition(curves):
    fig = effective_rank_figure(curves, "base-model", CONDITIONS + ["aqua/none/irrelevant",
                                                                  "gsm8k/none/correct"])
    assert len(fig.axes) == 5
    assert len(fig.axes[0].get_lines()) == 4
    assert len(fig.axes[4].get_lines()) == 0  # no data for gsm8k
    assert fig.axes[3].get_title() == "aqua: None CoT (irrelevant)"


def test_length_scatter_points_per_sample(results):
    per_sample = per_sample_means(results)
    fig = length_scatter(per_sample, "base-model", "aqua")
    (ax,) = fig.axes
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == 3 * 4  # correct responses of three settings, four samples each
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_condition_title():
    assert condition_title("wiki/len1000/correct") == "wiki: Wiki ~1000 words"


def test_model_grid_one_row_per_model():
    two = make_results(reasoning_conditions("aqua"), n_samples=3,
                       models={"base-model": ("base", 18), "chat-model": ("instruct", 30)})
    curves = layer_curves(two, "nuclear_norm")
    fig = model_grid(curves, ["base-model", "chat-model"], CONDITIONS[:2], note="two families")
    assert len(fig.axes) == 2 * 2
    assert [len(line.get_xdata()) for line in fig.axes[0].get_lines()] == [18] * 4
    assert [len(line.get_xdata()) for line in fig.axes[2].get_lines()] == [30] * 4
    assert fig.axes[2].get_ylabel().startswith("chat-model")
    assert any(t.get_text() == "two families" for t in fig.texts)
