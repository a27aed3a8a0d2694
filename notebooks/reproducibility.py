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
# What produced the numbers in this book: the run profile, the package versions, the data files
# and their published checksums, the models, and how long each part took. The run log is
# `run_log.json` in the results directory; `python -m analysis run --profile <name>` writes it.

# %% tags=["parameters"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every condition of the default profile
n_samples = None
max_length = 1024
batch_size = 4
device = "cpu"
results_dir = "results/cpu"
data_dir = None
seed = 0
n_resamples = 1000
benchmarks_file = "benchmarks/results.json"

# %%
from analysis import parameters, pipeline, report

params = parameters.validate(
    "reproducibility", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
    batch_size=batch_size, device=device, results_dir=results_dir, data_dir=data_dir, seed=seed,
    n_resamples=n_resamples,
)
benchmarks = parameters.optional_path("benchmarks_file", benchmarks_file)
log = pipeline.read_run_log(params.results_dir)
run = report.latest_run(log)
results = report.load_results(params.results_dir, params.models, params.conditions, params.max_length,
                              params.n_samples, params.data_dir)

# %% [markdown]
# ## The run

# %%
report.show_markdown(report.run_sentence(log, params.results_dir))
report.show_table(report.profile_table(run), empty="The results directory has no run log.")

# %% [markdown]
# ## Models

# %%
report.show_table(report.models_used_table(results.rows), empty="No results are stored.", by=None)
if report.figure_note(results.models):
    report.show_markdown(f"*{report.figure_note(results.models)}.*")

# %% [markdown]
# ## Data files
#
# Each condition's file, hashed now and compared with the sha256 published with the original
# study's data (the results store also records the hash of the file each row came from).

# %%
data_check = report.data_check_table(params.conditions, params.data_dir)
report.show_markdown(report.data_check_sentence(data_check))

# %% tags=["hide-output"]
report.show_table(data_check)

# %% [markdown]
# ## Run times

# %%
report.show_table(report.time_summary(log), empty="No run times are recorded.")

# %% tags=["hide-output"]
report.show_table(report.extraction_time_table(log), empty="No extraction was recorded.")

# %% [markdown]
# ## Package versions
#
# As recorded by the run, next to those of the kernel that executed this page.

# %%
report.show_table(report.package_table(run, pipeline.package_versions()))

# %% [markdown]
# ## Benchmarks

# %%
benchmark = report.benchmark_table(benchmarks) if benchmarks else None
report.show_table(benchmark, empty=f"No benchmark results file (`{benchmarks.name if benchmarks else 'none given'}`); "
                  "`make benchmark` writes `benchmarks/results.json`.", by=None)
