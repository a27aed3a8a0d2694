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
# This page pairs each instruct model with a base model, checks F4 with both models resampled on
# the same instructions, and shows their layer curves one above the other. F4 is only checked for
# an instruct model and its own base model (a pair of the paper); two models of different
# families get "not applicable", with the reason. Definitions and the verdict rules:
# [methods](../methods.md).

# %% tags=["parameters", "remove-cell"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every study condition
n_samples = None  # first N samples of each condition; None: all that are stored
max_length = 1024
results_dir = "results/cpu"
data_dir = None
seed = 0
n_resamples = 1000

# %% tags=["remove-cell"]
from analysis.report import sections, tables
from analysis.report.display import show_markdown, show_table
from analysis.report.page import Page

page = Page.open(
    "pretrained_vs_instruct",
    models=models,
    conditions=conditions,
    n_samples=n_samples,
    max_length=max_length,
    results_dir=results_dir,
    data_dir=data_dir,
    seed=seed,
    n_resamples=n_resamples,
)

# %% [markdown]
# ## Which models are compared

# %% tags=["remove-input"]
show_markdown(page.coverage())
show_table(
    tables.pairs_table(page.pairs, page.results.templates, {m: cd.n_layers for m, cd in page.draws.items()}),
    empty="No base and instruct model pair is present.",
    by=None,
)
show_markdown(tables.confound_statement(page.pairs))

# %% [markdown]
# ## F4: is the instruct model better at telling correct from irrelevant?

# %% tags=["remove-input"]
sections.claims(("F4",))
sections.answers(page, ("F4",))
sections.pooled_findings(page, ("F4",))

# %% tags=["remove-input", "hide-output"]
sections.tables_findings(page, ("F4",))

# %% [markdown]
# ## Layer curves, base above instruct
#
# Mean nuclear norm per layer (Q red, K green, V blue, O gray), one column per setting (correct
# responses), the base model in the top row and the instruct model below, 95% bands. A row
# shares its scale; the two models have their own.

# %% tags=["remove-input"]
sections.pair_curves(page)

# %% [markdown]
# ## MAD and RD side by side
#
# All-layer MAD (mean over Q, K, V, O) and mean |RD| between correct and irrelevant responses,
# for both models of each pair.

# %% tags=["remove-input", "hide-output"]
sections.tables_pairs(page)

# %% [markdown]
# ## The other findings, model by model
#
# The pooled verdicts of the other checks for both kinds of model, for comparison.

# %% tags=["remove-input"]
sections.pooled_findings(page, ("F1", "F2", "F3", "L", "L2"))
