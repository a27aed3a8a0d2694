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
# # Where the gap comes from
#
# Fast thinking's gradient (None CoT) is larger than slow thinking's (Detailed CoT): F1. On the
# instructions that hold six conditions the study extracts, that gap splits exactly into five
# steps: **the phrase** (the bare answer against the same answer after "The final answer is "),
# **the reasoning** (the same answer tokens after the Detailed CoT), **which tokens at equal loss**
# (the answer's tokens against as many chain tokens whose loss matches theirs), **how surprising**
# (those matched tokens against as many random chain tokens) and **how many tokens** (those few
# against all of the chain's: averaging). The check S decides on the reasoning step, the paper's
# reading that reasoning itself makes the gradient smaller; A3 and A5 are its controls (the
# answer's loss, a context without the reasoning). The page then splits F1's and F3's gaps layer by
# layer into averaging, token size, alignment and shape, and asks whether the curves carry
# information on which response is irrelevant that the token losses lack (G1). The methods:
# [where a gap comes from](../gap_methods.md); the rules: [the checks](../checks.md).

# %% tags=["remove-cell"]
from analysis.report import gap_sources, loss_convention, sections
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
    "where_the_gap_comes_from", given_parameters(globals(), names_before_parameters), stats=("nuclear_norm",)
)

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## F1's gap in five steps, per dataset
#
# Each step is one condition's gradient over the next's (a ratio of geometric means), on the
# instructions that hold all six, so the steps multiply to F1's gap there; above x1: the step makes
# fast thinking's gradient larger. A step is decided when its interval clears x1 (larger, smaller)
# or lies within 10% of no change (about the same). In the Frobenius norm, what averaging alone
# predicts of the last step stands beside it. A family's value is the mean over its datasets, and
# it is decided only where each dataset is decided the same way.

# %% tags=["remove-input"]
show(sections.chains(page))

# %% [markdown]
# ## The reasoning step: the answer with and without reasoning before it
#
# Per layer, F1's gap of mean log nuclear norm (None less Detailed CoT, mean over Q, K, V and O)
# with every response token scored (dashed: 1-3 answer tokens against hundreds of reasoning
# tokens) and with the final answer's tokens scored alone (solid: the same tokens on both sides,
# after the same phrase, so that no averaging enters), per dataset. Above 0, the answer's gradient
# is larger without the reasoning.

# %% tags=["remove-input"]
show(sections.reasoning_layers(page))

# %% [markdown]
# The instructions whose Detailed CoT states the appended answer word for word, on which the
# reasoning step is shown beside the whole (its table under "The answers"):

# %% tags=["remove-input"]
show(sections.verbatim_counts(page))

# %% [markdown]
# ## The gaps, layer by layer
#
# Per layer, each gap of mean log nuclear norm (F1: None against Detailed CoT, correct responses;
# F3: irrelevant against correct responses under Detailed CoT; mean over Q, K, V, O and the
# datasets; the line) as the sum of its parts (the bars): averaging, the same at every layer of a
# sample; token size and alignment, split where the store holds the token energy (profile
# `decompose`) and shown together otherwise; and the spectral shape (nuclear over Frobenius norm).
# Averaging cancels from F1's second part (early against late layers): what makes that part is in
# the other bars. The tables give each part's mean over layers. The averaging bar is not the split's
# how-many-tokens step: that step is measured (the chain's few scored tokens against all of them, in
# the nuclear norm, last in the split's order), while the averaging bar is what averaging alone
# predicts, -1/2 log R, which the split's Frobenius table sets beside the measured step.

# %% tags=["remove-input"]
show(gap_sources.layer_splits(page))

# %% [markdown]
# ## F1 under another loss convention
#
# The paper's loss is a mean over a response's tokens. A loss summed over tokens (as in DAPO or
# Dr. GRPO-style training, and any mean over the tokens of a batch of responses of mixed lengths)
# weights a sample by its token count R, so its gradient is R times larger: F1's gap then loses
# log(R_Detailed / R_None). The remainder is the same under both conventions: token size and
# alignment are properties of the token gradients, which the convention leaves as they are; only
# the averaging part changes, from -1/2 log R to +1/2 log R.

# %% tags=["remove-input"]
show(loss_convention.section(page))

# %% [markdown]
# ## The answers
#
# The verdict matrix of this chapter's checks, then each check in words, per model (its pooled
# cells where a family has two datasets), with its numbers per dataset folded under it. Intervals
# are 95% intervals over instructions.

# %% tags=["remove-input"]
show(sections.answers(page))
show(gap_sources.screen_blocks(page))
