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
# # Commonsense reasoning
#
# StrategyQA, ECQA, CREAK and Sensemaking under None CoT (bare answer), Simplified CoT and
# Detailed CoT, each with correct responses and with irrelevant ones. In StrategyQA, CREAK and
# Sensemaking about half of the None-CoT "irrelevant" answers are the same answer as the correct
# one (yes/no, "Sentence A/B"): a sampled run draws its instructions from the others (the same
# ones under every setting), and a run of all records leaves such pairs out of every
# correct-vs-irrelevant comparison and says how many. This page shows the layer curves, MAD and RD,
# then checks F1 to F4 per dataset and pooled over the family, and ends with three analyses beyond
# the paper. Definitions: [methods](../methods.md); the verdict rules: [the checks](../checks.md).

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
page = Page.open("commonsense_reasoning", given_parameters(globals(), names_before_parameters))

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
# ## The findings on these data
#
# The claims checked, in plain words with a link to each one's rule, then the verdict matrix: each
# cell one check for one model, on a family of datasets pooled or on one dataset; the number is the
# size of the part that decided
# its colour (hovering over a cell shows every part with its interval, and the instructions behind
# the verdict).

# %% tags=["remove-input"]
show(sections.findings(page))

# %% [markdown]
# ## Beyond the paper
#
# ### Effective rank
#
# The effective rank of each gradient (the exponential of the entropy of its normalised
# singular values, from the follow-up study {cite:p}`li2025dataquality`), averaged over layers
# and projections: the fastest setting minus the slowest, per dataset and pooled.

# %% tags=["remove-input"]
show(sections.effective_rank(page))

# %% [markdown]
# ### One sample at a time: correct or irrelevant?
#
# A logistic regression on one sample's layer-wise nuclear norms (all projections and layers),
# cross-validated with instructions kept out of the folds they are tested on; the out-of-fold
# AUROC is 0.5 without signal.

# %% tags=["remove-input"]
show(sections.separability(page))

# %% [markdown]
# ### Is the gap only response length?
#
# Detailed CoT responses cut to the token count of the same question's Simplified-CoT response
# (tens of tokens), against Simplified CoT (same length, different style) and full Detailed CoT,
# in mean log nuclear norm: L asks whether content matters beyond length, L2 whether length
# matters. The figure shows the share of the Simplified vs Detailed gap left at equal length (1:
# none of the gap is length; 0: all of it is), only where that gap is established. The cut to the
# None-CoT length (1 to 3 tokens) stays as a second view in the numbers. Then a regression over
# all samples of a dataset: the log of a sample's mean nuclear norm on the log of its response
# length and on its setting.

# %% tags=["remove-input"]
show(sections.length(page))
