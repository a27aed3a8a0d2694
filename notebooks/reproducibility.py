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
# # Reproducibility
#
# What produced the numbers in this book: the run profile, the package versions, the models and
# their revisions, the data files and their published checksums, how long each part took, and how
# well the book's intervals and verdicts work. The run log is `run_log.json` in the results
# directory; `python -m analysis run --profile <name>` writes it.

# %% tags=["remove-cell"]
from analysis.report import reproducibility as sections
from analysis.report.display import show
from analysis.report.notebook_parameters import given_parameters, names_defined

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # the run shown: its models, conditions, samples and settings come from its run log
results_dir = None  # None: results/<profile>
data_dir = None  # None: $LAYER_GRADIENT_DATA, else data/layer_gradient
models = None  # a subset of the run's models; None: all of them
conditions = None  # a subset of this page's conditions in the run; None: all of them
benchmarks_file = "benchmarks/results.json"
export_file = None  # the results store as one Parquet file, published with the book
deciding_dir = None  # the deciding run's store (profile decide), against which this run's power statements are tested

# %% tags=["remove-cell"]
page = sections.Reproducibility.open("reproducibility", given_parameters(globals(), names_before_parameters))

# %% [markdown]
# ## The run

# %% tags=["remove-input"]
show(sections.run(page))

# %% [markdown]
# ## The numbers behind this book

# %% tags=["remove-input"]
show(sections.numbers(page))

# %% tags=["remove-input", "hide-output"]
show(sections.imports(page))

# %% [markdown]
# ## Models
#
# The models found in the results store, and what the run recorded of each: the revision loaded
# (a hub commit, the offline package's version, or a local folder), the attention implementation
# and the hash of the tokenizer's chat template (a different template changes the prompt, the
# loss mask and so the gradients).

# %% tags=["remove-input"]
show(sections.models(page))

# %% [markdown]
# ## Data files
#
# Each condition's file, hashed now and compared with the sha256 published with the original
# study's data (the results store also records the hash of the file each row came from).

# %% tags=["remove-input"]
show(sections.data_check(page))

# %% tags=["remove-input", "hide-output"]
show(sections.data_check_files(page))

# %% [markdown]
# ## Run times

# %% tags=["remove-input"]
show(sections.run_times(page))

# %% tags=["remove-input", "hide-output"]
show(sections.extraction_times(page))

# %% [markdown]
# ## How well the intervals and verdicts work
#
# Data simulated in the study's design (instructions nested in datasets, every instruction under
# each setting, log-normal per-sample values with None CoT far noisier than Detailed CoT, pooled
# datasets with unequal spreads and counts) and passed through the book's own functions
# (`analysis.findings.calibration`). First, how often each rule says "holds" when its claim is
# false at its boundary (at most the rule's stated rate, 2.5% unless it states more), next to the paper's MAD rule on the same data;
# then the coverage of the 95% intervals with each one-sided miss; then the measurements that
# chose the quantities (logs of per-sample values rather than logs of mean values; the exact bias
# factor) and the interval of an accuracy; last, the power of the rules at 5 instructions per
# dataset and the instructions per dataset that give 80%.

# %% tags=["remove-input"]
show(sections.rule_rates(page))

# %% [markdown]
# The stated level under hard noise (`analysis.findings.calibration.scenarios`): how often each 95% interval
# lies wholly above the truth ("miss below") and wholly below it ("miss above"), promised at most
# 2.5% each, at 5 instructions per dataset, for the mean log difference that decides (F1, F3's Detailed part,
# L, L2) with its t interval and a bootstrap-t interval, the paper's log ratio of arithmetic means
# (shown beside the verdicts, not deciding) with both intervals, the roughness difference of F2
# and F5, and the mean curve's roughness difference (F2's None vs Simplified where None's log-scale
# spread changes across layers). With 400 runs a rate has a Monte Carlo standard error of about 0.8 points.

# %% tags=["remove-input"]
show(sections.misses(page))

# %% [markdown]
# Skew in both directions (`analysis.findings.skew`): how often each rule says "holds" when its
# claim is false at its boundary with per-sample logs of skewness -2, -1, +1 and +2, beside the rate
# the rule states (the rate the verdict matrix's note uses for its checks).

# %% tags=["remove-input"]
show(sections.skewed(page))

# %% [markdown]
# Families whose datasets differ (`analysis.findings.calibration.family_rates`): two quiet datasets
# of 20 instructions with equal true values, one with an effect and one without, or opposite ones,
# decided as the checks decide a family (a directional claim by the mean of its datasets unless a
# dataset is decided against it; "about the same" only where every dataset is; datasets decided in
# opposite directions disagree) and, beside it, by the mean alone. The error is a "holds" where the
# family's claim is false, a "does not hold" where it is true.

# %% tags=["remove-input"]
show(sections.family_rates(page))

# %% [markdown]
# ## How much this run resolves
#
# A cell is resolved where its claim holds or does not hold, or where its family's datasets are
# decided in opposite directions (they disagree); one that is not resolved needs more instructions
# (the size its page states) or more datasets. The split of F1's gap decides a dataset's step where
# its interval clears 0 or lies within 10% of no change, and a family's where every dataset's is
# decided alike, or where two are decided in opposite directions.

# %% tags=["remove-input"]
show(sections.resolution(page))

# %% [markdown]
# The power statements tested: where this run leaves a cell open, its pages say about how many
# instructions per dataset would decide it (at the cell's measured value and spread). The deciding
# run (`make book PROFILE=decide`, 16 instructions per dataset on the six datasets with None CoT) tests the
# statements of about 40 or fewer: how many of those cells it decided.

# %% tags=["remove-input"]
show(sections.power_statements(page))

# %% [markdown]
# ## Package versions
#
# As recorded by the run, next to those of the kernel that executed this page.

# %% tags=["remove-input"]
show(sections.packages(page))

# %% [markdown]
# ## Benchmarks

# %% tags=["remove-input"]
show(sections.benchmarks(page))

# %% [markdown]
# With one other process busy on one core: the project's run, with the torch threads it chooses
# from the cores free when it starts, against a one-thread run on the idle machine (target: at most
# 1.2 times as long), and torch's default threads on the busy machine for comparison.

# %% tags=["remove-input"]
show(sections.busy_core(page))

# %% [markdown]
# ## The GPU check
#
# `make gpu-check` measures the GPU path in one command: exactness on the device, the speed of the
# extraction against the plain procedure on a model of Qwen2-1.5B's shape, the memory plan against
# what CUDA measures, the halving on out-of-memory and one training step (the methods page, "The
# GPU check").

# %% tags=["remove-input"]
show(sections.gpu(page))

# %% [markdown]
# ## How a page is made
#
# Every chapter opens its data with one call, then shows what the `analysis.report` modules
# return; the code cells are hidden from the pages. For example, the math reasoning chapter:
#
# ```python
# from analysis.report import sections
# from analysis.report.display import show
# from analysis.report.page import Page
#
# names_before_parameters = names_defined(globals())  # then the parameters cell: profile, results_dir, ...
# page = Page.open("math_reasoning", given_parameters(globals(), names_before_parameters))
# show(sections.provenance(page))  # what the page read and the caveats of its models, folded
# show(sections.curves(page))      # the paper's figure per model and dataset, the MAD and RD tables folded
# show(sections.findings(page))    # the claims its chapter checks, the verdict matrix and the numbers
# ```
#
# To execute a chapter by hand, see the page "Running the study" ("Re-executing a page").
