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
# # The original study's numbers next to this project's
#
# The original study released its per-sample gradient statistics; this project computes the same
# statistics with its own code. For every model stored both ways (imported with
# `python -m analysis import-original`, extracted with `python -m analysis run` or `extract`, with
# the same truncation length and prompt template), each sample's relative difference
# |extracted - imported| / |imported| of the nuclear norm, the largest singular value and the
# Frobenius norm, the largest over the sample's layers and attention projections.

# %% tags=["parameters", "remove-cell"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every condition of the default profile
n_samples = None
max_length = 1024
results_dir = "results/cpu"
data_dir = None
seed = 0
n_resamples = 1000
compare_dirs = None  # other results stores to look in (e.g. results/original and results/paper)

# %% tags=["remove-cell"]
from analysis.report import comparison, notebook_parameters
from analysis.report.display import show_markdown, show_table

params = notebook_parameters.validate(
    "original_comparison",
    models=models,
    conditions=conditions,
    n_samples=n_samples,
    max_length=max_length,
    results_dir=results_dir,
    data_dir=data_dir,
    seed=seed,
    n_resamples=n_resamples,
)
others = [notebook_parameters.optional_path("compare_dirs", d) for d in (compare_dirs or [])]
differences = comparison.compare([params.results_dir, *others], params.models, params.conditions)

# %% [markdown]
# ## Agreement per model

# %% tags=["remove-input"]
show_markdown(comparison.comparison_paragraph(differences))

# %% [markdown]
# ## Per condition and statistic
#
# Samples compared, the share whose relative difference is at most 1e-3, and the median and
# largest relative difference.

# %% tags=["remove-input", "hide-output"]
show_table(comparison.format_agreement(comparison.agreement_table(differences)), empty="Nothing to compare.")

# %% [markdown]
# ## Samples that differ by more than 1e-3

# %% tags=["remove-input", "hide-output"]
show_table(comparison.mismatches(differences), empty="None.")
