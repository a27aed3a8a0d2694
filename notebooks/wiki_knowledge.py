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
# same results store. This page shows the layer curves first, then F5's verdicts. Definitions:
# [methods](../methods.md); the verdict rules: [the checks](../checks.md).

# %% tags=["remove-cell"]
from analysis.report import sections
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
page = Page.open("wiki_knowledge", given_parameters(globals(), names_before_parameters))

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## Layer curves
#
# Mean nuclear norm of the gradient of each attention projection (Q red, K green, V blue, O gray)
# per layer, one panel per setting (correct responses, panels of a row on one scale); the second
# row shows the share of the largest singular value, s1 / nuclear norm. Shaded: 95% bands. Below
# them, folded: the mean absolute difference between adjacent layers of each mean curve (MAD), over
# the early, middle and late layers and over all layers, and the relative difference of irrelevant
# against correct responses per layer (RD; [methods](../methods.md)), with 95% intervals.

# %% tags=["remove-input"]
show(sections.curves(page))

# %% [markdown]
# ## The finding on these data
#
# The claim checked, in plain words with a link to its rule, then the verdict matrix: each cell one
# check for one model; the number is the size of the part that decided
# its colour (hovering over a cell shows every part with its interval, and the instructions behind
# the verdict).

# %% tags=["remove-input"]
show(sections.findings(page))

# %% [markdown]
# ## Beyond the paper
#
# ### Effective rank
#
# Mean effective rank (from the follow-up study {cite:p}`li2025dataquality`) over layers and
# projections: the shortest Wiki responses minus the longest.

# %% tags=["remove-input"]
show(sections.effective_rank(page))

# %% [markdown]
# ### One sample at a time: correct or irrelevant?

# %% tags=["remove-input"]
show(sections.separability(page))

# %% [markdown]
# ### Response length
#
# A regression over all Wiki samples: the log of a sample's mean nuclear norm on the log of its
# response length and on its length setting.

# %% tags=["remove-input"]
show(sections.length(page))
