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
# # Fast and slow thinking in LLM layers, seen through gradients
#
# A reproduction of {cite:t}`li2025fastslow`.

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
page = Page.open("intro", given_parameters(globals(), names_before_parameters), stats=("nuclear_norm",))

# %% tags=["remove-input"]
show(sections.opening(page))

# %% [markdown]
# ## The paper's claims

# %% tags=["remove-input"]
show(sections.claims_table(page))

# %% [markdown]
# ## The gap, step by step
#
# F1's gap is fast thinking's gradient over slow thinking's (x1: no difference). On the same
# instructions it splits into five steps that multiply to it, each changing one thing between the
# bare answer and the detailed chain; how to read the figure is folded under it.

# %% tags=["remove-input"]
show(sections.split(page))

# %% [markdown]
# ## The verdicts at a glance

# %% tags=["remove-input"]
show(sections.answers(page))
show(sections.matrix_legend())
show(sections.other_claims(page, folded="The other questions, in words"))
show(sections.claims(page, folded="The claims, each linked to its rule"))

# %% [markdown]
# ## Fast thinking, slow thinking: the layer curves
#
# Mean nuclear norm of the gradient of each attention projection (Q red, K green, V blue, O
# gray) per layer, for the same questions answered with no chain of thought, a short one and a
# detailed one (correct responses, 95% bands). The panels of a row share their scale.

# %% tags=["remove-input"]
show(sections.headline(page))

# %% tags=["remove-input"]
show(sections.provenance(page))

# %% [markdown]
# ## The question
#
# Does the way a response is written change which layers receive large gradients, and how
# evenly? The paper reports that fast thinking gives larger gradients that vary more across
# layers (F1, F2), that slow thinking tells correct from irrelevant responses apart (F3), that
# instruction-tuned models do not do this better than pre-trained ones (F4), and that long
# knowledge-heavy responses do not behave like slow thinking (F5).
#
# ## The method in plain words
#
# For every sample (an instruction and a response) the model reads the text and the loss on the
# response tokens is differentiated with respect to the four attention matrices of every layer
# (query, key, value, output). Nothing is trained: each gradient is summarised by the singular
# values of the matrix (above all their sum, the nuclear norm) and thrown away. Averaging over
# samples gives, for every layer, one number per attention matrix: a *layer curve*. Comparing the
# curves of the same questions answered in different styles is the whole study. The exact
# definitions, the rules behind every verdict and their error rates are on the
# [methods page](../methods.md).
#
# The data are the original study's 56 files: five math and four commonsense reasoning datasets
# and one Wikipedia knowledge set, each with correct responses and with irrelevant ones. The book
# adds 30 *length-control* conditions that cut detailed chains of thought to the length of the
# faster response to the same question.
#
# ## What is reproduced, on which models
#
# | profile | models | instructions per dataset | command |
# | --- | --- | --- | --- |
# | `quick` | the two offline models | 2, a few conditions, responses cut at 128 tokens | `make book PROFILE=quick` |
# | `cpu` (default) | the two offline models | 5, the conditions behind the verdicts they can resolve (no Wiki files) | `make book` |
# | `cpu-full` | the two offline models | 5, every condition and view | `make book PROFILE=cpu-full` |
# | `decide` | the two offline models | 16, the conditions of the split of F1's gap and of F3 on the six datasets with None CoT | `make book PROFILE=decide` |
# | `paper` | the paper's ten models (five base / instruct pairs) | all (500 per file) | `make book PROFILE=paper` on a GPU |
# | `original` | the paper's ten models, on the original study's released statistics | all (500 per file), the 56 study files | `python -m analysis import-original SOURCE --out results/original`, then `make book PROFILE=original` |
#
# The paper's models need a GPU and access to a model hub; without them the book runs on two
# small offline models, or on the original study's own released statistics (`original`).
#
# ## References
#
# ```{bibliography}
# ```
