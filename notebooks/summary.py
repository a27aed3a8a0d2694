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
# # Summary: the paper's findings, checked
#
# Every check of the paper's findings (F1 to F5) that the stored results cover, for every model
# and dataset, read from the results store in one place. A check "holds" only when its 95%
# bootstrap intervals support it, "does not hold" when they contradict it, and is "not resolved"
# otherwise; the column "point estimate alone" shows what the numbers say without intervals.

# %% tags=["parameters"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every condition of the default profile
n_samples = None  # first N samples of each condition; None: all that are stored
max_length = 1024
batch_size = 4
device = "cpu"
results_dir = "results/cpu"
data_dir = None
seed = 0
n_resamples = 1000

# %%
from analysis import parameters, report

params = parameters.validate(
    "summary", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
    batch_size=batch_size, device=device, results_dir=results_dir, data_dir=data_dir, seed=seed,
    n_resamples=n_resamples,
)
results = report.load_results(params.results_dir, params.models, params.conditions, params.max_length,
                              params.n_samples, params.data_dir)
report.require_rows(results)
draws = report.all_curve_draws(results, ("nuclear_norm",), n_resamples=params.n_resamples, seed=params.seed)
findings = report.findings_table(draws, results.rows)

# %% [markdown]
# ## What was checked

# %%
report.show_markdown(report.coverage_message(results))
if report.figure_note(results.models):
    report.show_markdown(f"*{report.figure_note(results.models)}.*")
report.show_markdown(report.claims_text(findings))

# %% [markdown]
# ## Verdicts

# %%
report.show_markdown(report.findings_summary(findings))

# %% [markdown]
# Counts per check and model, as "holds / does not hold / not resolved" over datasets:

# %%
report.show_table(report.verdict_matrix(findings).reset_index())

# %% [markdown]
# ## Every check with its numbers

# %%
report.show_table(report.format_findings(findings))

# %% [markdown]
# ## In words

# %%
report.show_markdown("\n\n".join(report.finding_sentence(row) for _, row in findings.iterrows()))

# %% [markdown]
# ## Against the numbers reported for the paper
#
# One set of all-layer MADs is reported for Qwen2-1.5B on AQuA (from a secondary source, so
# indicative only). It is compared here when that model's results are stored.

# %%
report.show_table(report.reported_mad_comparison(draws),
                  empty="Qwen/Qwen2-1.5B is not among the stored models (it runs in the paper profile).")
