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
# # Beyond the paper
#
# The paper compares mean curves. Three questions it leaves open, answered on all stored results,
# pooled over the datasets of a family first and per dataset below:
#
# 1. Can the gradients of a single sample tell a correct response from an irrelevant one?
# 2. Is the gap between fast and slow thinking only an effect of response length?
# 3. Does the effective rank of the gradients (the measure of the follow-up study,
#    {cite:t}`li2025dataquality`) separate fast from slow thinking too?
#
# Methods: [methods](../methods.md). Intervals are 95% intervals over instructions.

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
page = Page.open(
    "beyond_the_paper", given_parameters(globals(), names_before_parameters), stats=("nuclear_norm", "effective_rank")
)

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## 1. One sample: correct or irrelevant?
#
# For each model, dataset and setting, a standardised logistic regression on one sample's
# nuclear norms (every projection and layer, log scale) is cross-validated with the folds grouped
# by instruction, so that a question never sits on both sides. The out-of-fold AUROC is 0.5
# without signal; the figure shows it pooled over each family's datasets. The responses count as
# separable when the interval lies above 0.5.

# %% tags=["remove-input"]
show(sections.separability(page))

# %% [markdown]
# ## 2. Is the fast/slow gap only response length?
#
# Detailed CoT responses cut to the token count of the same question's Simplified-CoT response
# (tens of tokens), against Simplified CoT (same length, different style) and full Detailed CoT,
# in mean log nuclear norm: L asks whether content matters beyond length, L2 whether length
# matters. The figure shows the share of the Simplified vs Detailed gap left at equal length (1:
# none of the gap is length; 0: all of it is), only where that gap is established. The cut to the
# None-CoT length (1 to 3 tokens) stays as a second view in the numbers.
#
# Then a regression over all samples of a dataset: the log of a sample's mean nuclear norm on the
# log of its response length and on its setting. If the setting gap shrinks once length is in the
# model, length carries the gap.

# %% tags=["remove-input"]
show(sections.length(page))

# %% [markdown]
# ## 3. Effective rank under fast and slow thinking
#
# Mean effective rank over all layers and the four projections, fastest setting minus slowest
# setting of each dataset (correct responses), pooled per family. A sample's gradient of a
# projection is a sum of one rank-one term per position whose output reaches the loss, so its rank,
# and its effective rank, cannot exceed the number of tokens up to the last scored one, the prompt's
# included (for the last layer's Q and O projections, whose outputs reach only their own position's
# prediction, the scored tokens alone). A short answer after a short prompt is bounded well below a
# long chain, whatever the layers do.

# %% tags=["remove-input"]
show(sections.effective_rank(page))
