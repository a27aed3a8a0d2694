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
# # Wiki knowledge
#
# Descriptions of popular Wikipedia entities with responses of about 100, 500 and 1000 words, and
# of unpopular (long-tail) entities, each with correct responses and with irrelevant ones
# (descriptions of other entities). Longer responses here add knowledge, not reasoning steps: the
# question is whether length alone reproduces the slow-thinking pattern of the reasoning data
# (finding F5). F5 compares the Wiki contrast (about 1000 vs 100 words, an 8-fold length ratio)
# with the reasoning contrast of a similar length ratio, Detailed vs Simplified CoT, read from the
# same results store. Definitions and the verdict rules: [methods](../methods.md).

# %% tags=["remove-cell"]
from analysis.report import sections
from analysis.report.display import show_markdown
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
page = Page.open("wiki_knowledge", given_parameters(globals(), names_before_parameters))

# %% tags=["remove-input"]
show_markdown(page.coverage())

# %% [markdown]
# ## The findings on these data
#
# Each cell: one check for one model, on a family of datasets pooled or on one dataset; the
# number is the instructions behind the verdict. The claims:

# %% tags=["remove-input"]
sections.claims(page)
sections.answers(page)

# %% [markdown]
# The pooled answers with the numbers behind them (each part of a claim with its 95% interval):

# %% tags=["remove-input"]
sections.pooled_findings(page)

# %% [markdown]
# ## Layer curves
#
# Mean nuclear norm of the gradient of each attention projection (Q red, K green, V blue, O gray)
# per layer, one panel per setting (correct responses, panels of a row on one scale); the second
# row shows the share of the largest singular value, s1 / nuclear norm. Shaded: 95% bands.

# %% tags=["remove-input"]
sections.layer_curves(page)

# %% [markdown]
# ## Differences across layers (MAD) and correct vs irrelevant (RD)
#
# The mean absolute difference between adjacent layers of each mean curve, over the early,
# middle and late layers and over all layers, and the relative difference of irrelevant against
# correct responses per layer ([methods](../methods.md)), with 95% intervals.

# %% tags=["remove-input", "hide-output"]
sections.tables_mad(page)

# %% tags=["remove-input", "hide-output"]
sections.tables_rd(page)

# %% [markdown]
# ## Beyond the paper
#
# ### Effective rank
#
# Mean effective rank (from the follow-up study {cite:p}`li2025dataquality`) over layers and
# projections: the shortest Wiki responses minus the longest.

# %% tags=["remove-input"]
ranks = sections.effective_rank(page)

# %% [markdown]
# ### One sample at a time: correct or irrelevant?

# %% tags=["remove-input"]
separable = sections.separability(page)

# %% tags=["remove-input", "hide-output"]
sections.tables_separability(separable)

# %% [markdown]
# ### Response length
#
# A regression over all Wiki samples: the log of a sample's mean nuclear norm on the log of its
# response length and on its length setting.

# %% tags=["remove-input"]
regression = sections.length_regression(page)

# %% tags=["remove-input", "hide-output"]
sections.tables_length_regression(regression)
