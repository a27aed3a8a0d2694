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
# A sample's loss is the mean of the cross-entropy of its R response tokens, so its gradient is a
# mean of R token gradients. Were they of one size and unrelated in direction, the gradient would
# shrink like 1/sqrt(R) by averaging alone, and a Detailed CoT of hundreds of tokens would get a far
# smaller gradient than a bare answer of a few, with nothing learned about how the model thinks.
# Exactly, log nuclear norm = log shape + 1/2 log(token size) + 1/2 log(alignment) - 1/2 log R
# ([Methods: where a gap comes from](../gap_methods.md)). This page first scores the same tokens
# on both sides, the final answer after "The final answer is ", with and without the Detailed CoT
# before it: does reasoning change the answer's own gradient (A2), also where the answer is as
# predictable (A3)? It then splits F1's gap (None against Detailed CoT) and F3's (irrelevant
# against correct responses under Detailed CoT) into those parts, layer by layer, and asks two
# questions: is F1's gap more than averaging (A1), and do the curves carry information on which
# response is irrelevant that the token losses lack (G1)? The rules: [the checks](../checks.md).

# %% tags=["remove-cell"]
from analysis.report import answer_tokens, gap_sources, sections
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
# ## The same tokens: the answer with and without reasoning before it
#
# Per layer, F1's gap of mean log nuclear norm (None less Detailed CoT, mean over Q, K, V and O)
# with every response token scored (dashed: 1-3 answer tokens against hundreds of reasoning
# tokens) and with the final answer's tokens scored alone (solid: the same tokens on both sides,
# after the same phrase, so that no averaging enters), per dataset. Above 0, the answer's gradient
# is larger without the reasoning.

# %% tags=["remove-input"]
show(answer_tokens.same_token_section(page))

# %% [markdown]
# ## The same text scored two ways, and the answer's context
#
# A4 keeps the instruction's own Detailed CoT, read by the model as it is, and scores only a seeded
# random subset of its tokens, as many as the bare answer has: only the number of scored tokens
# changes. Its gradient over the all-token one is F1's gap without any change in how the model
# thinks. A5 asks whether the answer's gradient after its own chain (A2) is the reasoning's doing
# or any long text's: the same answer after the chain's words shuffled, and after another
# instruction's chain. The table counts the instructions whose Detailed CoT states the appended
# answer word for word, on which A2 is shown beside the whole (its table above).

# %% tags=["remove-input"]
show(answer_tokens.controls_section(page))

# %% [markdown]
# ## F1's gap, layer by layer
#
# Per layer, the gap of mean log nuclear norm between None and Detailed CoT (correct responses,
# mean over Q, K, V, O and the datasets; the line) as the sum of its parts (the bars): averaging,
# the same at every layer of a sample; token size and alignment, split where the store holds the
# token energy (profile `decompose`) and shown together otherwise; and the spectral shape (nuclear
# over Frobenius norm). Averaging cancels from F1's second part (early against late layers): what
# makes that part is in the other bars. The table gives each part's mean over layers.

# %% tags=["remove-input"]
show(gap_sources.f1_gap(page))

# %% [markdown]
# ## F3's gap, layer by layer
#
# The same for irrelevant against correct responses under Detailed CoT, where F3 sees a gap.

# %% tags=["remove-input"]
show(gap_sources.f3_gap(page))

# %% [markdown]
# ## F1 under another loss convention
#
# The paper's loss is a mean over a response's tokens. A loss summed over tokens (as in DAPO or
# Dr. GRPO-style training, and any mean over the tokens of a batch of responses of mixed lengths)
# weights a sample by its token count R, so its gradient is R times larger: F1's gap then loses
# log(R_Detailed / R_None). A1's remainder is the same under both conventions: token size and
# alignment are properties of the token gradients, which the convention leaves as they are; only
# the averaging part changes, from -1/2 log R to +1/2 log R.

# %% tags=["remove-input"]
show(answer_tokens.loss_convention_section(page))

# %% [markdown]
# ## The answers
#
# A1 decides on what is left of F1's Frobenius gap once averaging is taken out; G1 on the
# out-of-fold AUROC of the pairs' curve differences once the loss covariates are partialled out,
# against sign flips of whole pairs (its p-value; no interval). Intervals are 95% intervals over
# instructions.

# %% tags=["remove-input"]
show(sections.answers(page))
show(gap_sources.verdicts(page))
