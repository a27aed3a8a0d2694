# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Summary: the paper's findings, checked
#
# Every check of the paper's findings (F1 to F5) and of the two length questions (L, L2) that the
# stored results cover, for every model: first pooled over the datasets of a family (the answers), then
# per dataset (the detail). A claim "holds" when every interval it depends on lies on its side,
# "does not hold" when one lies on the other side, is "not resolved" otherwise, and gets no
# verdict below 5 instructions. The rules, margins and their error rates are on the
# [methods page](../methods.md).

# %% tags=["remove-cell"]
from analysis.findings import skew
from analysis.report import curve_tables, sections
from analysis.report.blocks import Table
from analysis.report.display import show
from analysis.report.notebook_parameters import given_parameters, names_defined
from analysis.report.page import Page

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # the run shown: its models, conditions, samples and settings come from its run log
results_dir = None  # None: results/<profile>
data_dir = None  # None: $LAYER_GRADIENT_DATA, else data/layer_gradient
models = None  # a subset of the run's models; None: all of them
conditions = None  # a subset of this page's conditions in the run; None: all of them

# %% tags=["remove-cell"]
page = Page.open("summary", given_parameters(globals(), names_before_parameters), stats=("nuclear_norm",))

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## The claims
#
# Each claim in plain words, with a link to its estimand and rule on the checks page.

# %% tags=["remove-input"]
show(sections.claims(page))

# %% [markdown]
# ## Verdicts

# %% tags=["remove-input"]
show(sections.answers(page))

# %% [markdown]
# ## The pooled answers with their numbers
#
# Each part of a claim with its estimate and 95% interval; ratios are written "x" (how many times
# larger), n is the number of instructions behind the verdict.

# %% tags=["remove-input"]
show(sections.pooled_findings(page))

# %% [markdown]
# ## Every check per dataset

# %% tags=["remove-input", "hide-output"]
show(sections.tables_findings(page))

# %% [markdown]
# ## How skewed this store's values are
#
# The rules' error rates are measured with per-sample logs of skewness -2 to +2 (the checks page,
# "The stated level"). This is the skewness over instructions of the stored per-sample log nuclear
# norms, per model, setting and response type (medians over datasets, projections and layers); with
# few instructions per curve it is itself a noisy estimate.

# %% tags=["remove-input"]
show(Table(skew.measured_skew(page.draws), empty="No curve has three or more instructions."))

# %% [markdown]
# ## Against the numbers reported for the paper
#
# One set of all-layer MADs is reported for Qwen2-1.5B on AQuA (from a secondary source, so
# indicative only). It is compared here when that model's results are stored.

# %% tags=["remove-input"]
show(
    Table(
        curve_tables.reported_mad_comparison(page.draws),
        empty="Qwen/Qwen2-1.5B is not among the stored models (it runs in the paper profile).",
    )
)
