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

# %% tags=["remove-cell"]
from analysis.report import comparison, coverage
from analysis.report.blocks import Markdown, Table
from analysis.report.display import show
from analysis.report.notebook_parameters import given_parameters, names_defined, optional_path, validate

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # the run shown: its models, conditions, samples and settings come from its run log
results_dir = None  # None: results/<profile>
data_dir = None  # None: $LAYER_GRADIENT_DATA, else data/layer_gradient
models = None  # a subset of the run's models; None: all of them
conditions = None  # a subset of this page's conditions in the run; None: all of them
compare_dirs = None  # other results stores to look in (e.g. results/original and results/paper)

# %% tags=["remove-cell"]
params = validate("original_comparison", given_parameters(globals(), names_before_parameters))
others = [optional_path("compare_dirs", d) for d in (params.extra["compare_dirs"] or [])]
differences = comparison.compare([params.results_dir, *others], params.models, params.conditions)

# %% [markdown]
# ## Agreement per model

# %% tags=["remove-input"]
show(Markdown(comparison.comparison_paragraph(differences, imported=coverage.imported_profile(params.profile))))

# %% [markdown]
# ## Per condition and statistic
#
# Samples compared, the share whose relative difference is at most 1e-3, and the median and
# largest relative difference.

# %% tags=["remove-input", "hide-output"]
show(Table(comparison.format_agreement(comparison.agreement_table(differences)), empty="Nothing to compare."))

# %% [markdown]
# ## Samples that differ by more than 1e-3

# %% tags=["remove-input", "hide-output"]
show(Table(comparison.mismatches(differences), empty="None."))
