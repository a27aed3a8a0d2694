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
# # Pre-trained vs instruct models
#
# The same data through a pre-trained (base) model and an instruction-tuned one. The paper
# compares each of its five base models with its own instruct version and finds that instruction
# tuning does not make a model better at telling correct from irrelevant responses (finding F4).
# This page pairs each instruct model with a base model, shows their layer curves one above the
# other, and checks F4 with both models resampled on the same instructions. F4 is only checked for
# an instruct model and its own base model (a pair of the paper); two models of different
# families get "not applicable", with the reason. Definitions: [methods](../methods.md); the
# verdict rules: [the checks](../checks.md).

# %% tags=["remove-cell"]
from analysis.checks import PER_MODEL, PER_PAIR
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
    "pretrained_vs_instruct", given_parameters(globals(), names_before_parameters), stats=("nuclear_norm",)
)

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## Which models are compared

# %% tags=["remove-input"]
show(sections.model_pairs(page))

# %% [markdown]
# ## Layer curves, base above instruct
#
# Mean nuclear norm per layer (Q red, K green, V blue, O gray), one column per setting (correct
# responses), the base model in the top row and the instruct model below, 95% bands. A row
# shares its scale; the two models have their own.

# %% tags=["remove-input"]
show(sections.pair_curves(page))

# %% [markdown]
# ## MAD and RD side by side
#
# All-layer MAD (mean over Q, K, V, O) and mean |RD| between correct and irrelevant responses,
# for both models of each pair.

# %% tags=["remove-input", "hide-output"]
show(sections.tables_pairs(page))

# %% [markdown]
# ## F4: is the instruct model better at telling correct from irrelevant?

# %% tags=["remove-input"]
show(sections.claims(page, scope=PER_PAIR))
show(sections.answers(page, scope=PER_PAIR))
show(sections.pooled_findings(page, scope=PER_PAIR))

# %% tags=["remove-input", "hide-output"]
show(sections.tables_findings(page, scope=PER_PAIR))

# %% [markdown]
# ## The other findings, model by model
#
# The pooled verdicts of the other checks for both kinds of model, for comparison.

# %% tags=["remove-input"]
show(sections.pooled_findings(page, scope=PER_MODEL))
