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
from analysis import runlog
from analysis.findings import calibration, skew
from analysis.findings.calibration import scenarios
from analysis.report import coverage, gpu_check, provenance
from analysis.report.display import show_markdown, show_table
from analysis.report.load import figure_note, origin_note
from analysis.report.notebook_parameters import given_parameters, names_defined, optional_path
from analysis.report.page import Page

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # the run shown: its models, conditions, samples and settings come from its run log
results_dir = None  # None: results/<profile>
data_dir = None  # None: $LAYER_GRADIENT_DATA, else data/layer_gradient
models = None  # a subset of the run's models; None: all of them
conditions = None  # a subset of this page's conditions in the run; None: all of them
benchmarks_file = "benchmarks/results.json"
export_file = None  # the results store as one Parquet file, published with the book

# %% tags=["remove-cell"]
page = Page.open("reproducibility", given_parameters(globals(), names_before_parameters), stats=())
params, results = page.params, page.results
benchmarks = optional_path("benchmarks_file", params.extra["benchmarks_file"])
export = optional_path("export_file", params.extra["export_file"])
runs = runlog.read(params.results_dir)
run = runs[-1] if runs else None
imported = coverage.imported_profile(params.profile)  # the original study's numbers: nothing computed here

# %% [markdown]
# ## The run

# %% tags=["remove-input"]
show_markdown(provenance.run_sentence(runs, params.results_dir, imported))
show_table(provenance.profile_table(run), empty="The results directory has no run log.")

# %% [markdown]
# ## The numbers behind this book

# %% tags=["remove-input"]
show_markdown(provenance.export_sentence(export, params.models, params.profile.name))
origin_of_numbers = origin_note(results.rows)
if origin_of_numbers:
    show_markdown(f"*{origin_of_numbers}.*")

# %% tags=["remove-input", "hide-output"]
show_table(provenance.imports_table(runs), empty="")

# %% [markdown]
# ## Models
#
# The models found in the results store, and what the run recorded of each: the revision loaded
# (a hub commit, the offline package's version, or a local folder), the attention implementation
# and the hash of the tokenizer's chat template (a different template changes the prompt, the
# loss mask and so the gradients).

# %% tags=["remove-input"]
show_table(provenance.models_used_table(results.rows, runs), empty="No results are stored.", by=None)
show_table(
    provenance.model_facts_table(run),
    empty="No model was loaded: the numbers are the original study's, imported."
    if imported
    else "The run log records no model facts.",
    by=None,
)
if figure_note(results.models):
    show_markdown(f"*{figure_note(results.models)}.*")

# %% [markdown]
# ## Data files
#
# Each condition's file, hashed now and compared with the sha256 published with the original
# study's data (the results store also records the hash of the file each row came from).

# %% tags=["remove-input"]
data_check = provenance.data_check_table(params.conditions, params.data_dir)
show_markdown(provenance.data_check_sentence(data_check))

# %% tags=["remove-input", "hide-output"]
show_table(provenance.data_check_shown(data_check))

# %% [markdown]
# ## Run times

# %% tags=["remove-input"]
show_table(provenance.time_summary(runs), empty="No run times are recorded.")

# %% tags=["remove-input", "hide-output"]
show_table(
    provenance.extraction_time_table(runs),
    empty="Nothing was computed: the numbers are imported (the files are listed above)."
    if imported
    else "No extraction was recorded.",
)

# %% [markdown]
# ## How well the intervals and verdicts work
#
# Data simulated in the study's design (instructions nested in datasets, every instruction under
# each setting, log-normal per-sample values with None CoT far noisier than Detailed CoT, pooled
# datasets with unequal spreads and counts) and passed through the book's own functions
# (`analysis.findings.calibration`). First, how often each rule says "holds" when its claim is
# false at its boundary (at most 2.5%; F4's rule its stated rate), next to the paper's MAD rule on the same data;
# then the coverage of the 95% intervals with each one-sided miss; then the measurements that
# chose the quantities (logs of per-sample values rather than logs of mean values; the exact bias
# factor) and the interval of an accuracy; last, the power of the rules at 5 instructions per
# dataset and the instructions per dataset that give 80%.

# %% tags=["remove-input"]
show_table(calibration.false_holds_table(reps=400, seed=params.seed), by=None)
show_table(calibration.coverage_table(reps=400, seed=params.seed), by=None)
show_table(calibration.log_ratio_coverage_table(reps=400, seed=params.seed), by=None)
show_table(calibration.share_table(reps=400, seed=params.seed), by=None)
show_table(calibration.power_table(reps=400, seed=params.seed), by=None)

# %% [markdown]
# The stated level under hard noise (`analysis.findings.calibration.scenarios`): how often each 95% interval
# lies wholly above the truth ("miss below") and wholly below it ("miss above"), promised at most
# 2.5% each, at 5 instructions per dataset, for the mean log difference that decides (F1, F3's Detailed part,
# L, L2) with its t interval and a bootstrap-t interval, the paper's log ratio of arithmetic means
# (shown beside the verdicts, not deciding) with both intervals, the roughness difference of F2
# and F5, and the mean curve's roughness difference (F2's None vs Simplified where None's log-scale
# spread changes across layers). With 400 runs a rate has a Monte Carlo standard error of about 0.8 points.

# %% tags=["remove-input"]
show_table(scenarios.miss_table(reps=400, seed=params.seed), by=None)

# %% [markdown]
# Skew in both directions (`analysis.findings.skew`): how often each rule says "holds" when its
# claim is false at its boundary with per-sample logs of skewness -2, -1, +1 and +2, beside the rate
# the rule states (the rate the verdict matrix's note uses for its checks).

# %% tags=["remove-input"]
show_table(skew.false_holds_by_skew(reps=400, seed=params.seed), by=None)

# %% [markdown]
# ## Package versions
#
# As recorded by the run, next to those of the kernel that executed this page.

# %% tags=["remove-input"]
show_table(provenance.package_table(run, runlog.package_versions()))

# %% [markdown]
# ## Benchmarks

# %% tags=["remove-input"]
benchmark = provenance.benchmark_table(benchmarks) if benchmarks and not imported else None
for part in provenance.benchmark_parts(benchmark):
    show_table(
        part,
        empty="This run computed nothing (its numbers are the original study's, imported), so this project's "
        "extraction benchmark (`make benchmark`) does not describe it."
        if imported
        else f"No benchmark results file (`{benchmarks.name if benchmarks else 'none given'}`); "
        "`make benchmark` writes `benchmarks/results.json`.",
        by=None,
    )

# %% [markdown]
# With one other process busy on one core: the project's run, with the torch threads it chooses
# from the cores free when it starts, against a one-thread run on the idle machine (target: at most
# 1.2 times as long), and torch's default threads on the busy machine for comparison.

# %% tags=["remove-input"]
show_table(
    provenance.busy_core_table(benchmarks) if benchmarks and not imported else None,
    empty="Not shown: this run computed nothing, as said above."
    if imported
    else "No one-core-busy rows in the benchmark results (`make benchmark` runs them with `--busy-core`).",
    by=None,
)

# %% [markdown]
# ## The GPU check
#
# `make gpu-check` measures the GPU path in one command: exactness on the device, the speed of the
# extraction against the plain procedure on a model of Qwen2-1.5B's shape, the memory plan against
# what CUDA measures, the halving on out-of-memory and one training step (the methods page, "The
# GPU check").

# %% tags=["remove-input"]
gpu_check_results = gpu_check.results_path(benchmarks)
show_markdown(gpu_check.sentence(gpu_check_results))
show_table(gpu_check.table(gpu_check_results), empty="", by=None)

# %% [markdown]
# ## How a page is made
#
# Every chapter opens its data with one call, then shows what the `analysis.report` modules
# return; the code cells are hidden from the pages. For example, the math reasoning chapter:
#
# ```python
# from analysis.report import sections
# from analysis.report.page import Page
#
# names_before_parameters = names_defined(globals())  # then the parameters cell: profile, results_dir, ...
# page = Page.open("math_reasoning", given_parameters(globals(), names_before_parameters))
# sections.provenance(page)  # what the page read and the caveats of its models, folded
# sections.curves(page)      # the paper's figure per model and dataset, the MAD and RD tables folded
# sections.findings(page)    # the claims its chapter checks (analysis.findings.checks), the verdict matrix
# ```
#
# To execute a chapter by hand, see the page "Running the study" ("Re-executing a page").
