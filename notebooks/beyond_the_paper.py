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
# # Beyond the paper
#
# The paper compares mean curves. Three questions it leaves open, answered here on all stored
# results with the numbers behind each answer:
#
# 1. Can the gradients of a single sample tell a correct response from an irrelevant one?
# 2. Is the gap between fast and slow thinking only an effect of response length?
# 3. Does the effective rank of the gradients (the measure of the follow-up paper,
#    arXiv 2504.10766) separate fast from slow thinking too?
#
# Methods: [methods](../methods.md). Intervals are 95% bootstrap intervals over instructions.

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
    "beyond_the_paper", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
    batch_size=batch_size, device=device, results_dir=results_dir, data_dir=data_dir, seed=seed,
    n_resamples=n_resamples,
)
results = report.load_results(params.results_dir, params.models, params.conditions, params.max_length,
                              params.n_samples, params.data_dir)
report.require_rows(results)
report.show_markdown(report.coverage_message(results))
if report.figure_note(results.models):
    report.show_markdown(f"*{report.figure_note(results.models)}.*")

# %% [markdown]
# ## 1. One sample: correct or irrelevant?
#
# For each model, dataset and setting, a standardised logistic regression on one sample's
# nuclear norms (every projection and layer, log scale) is cross-validated with the folds grouped
# by instruction, so that a question never sits on both sides. The out-of-fold AUROC is 0.5
# without signal; the responses count as separable when the lower end of its interval exceeds 0.5.

# %%
separability = report.separability_table(results.rows, params.n_resamples, params.seed)
report.show_markdown(report.separability_sentence(separability))

# %% tags=["hide-output"]
report.show_table(report.format_separability(separability))

# %% [markdown]
# ## 2. Is the fast/slow gap only response length?
#
# Two answers. First, the length-control conditions: Detailed CoT responses cut to the token count
# of the same question's faster response, compared sample by sample with that faster response
# (paired Wilcoxon signed-rank test on each sample's mean nuclear norm).

# %%
length_control = report.length_control_table(results.rows)
report.show_markdown(report.length_control_sentence(length_control))

# %% tags=["hide-output"]
report.show_table(report.format_length_control(length_control), empty="")

# %% [markdown]
# Second, a regression over all samples of a dataset: the log of a sample's mean nuclear norm on
# the log of its response length and on its setting. If the setting gap shrinks once length is in
# the model, length carries the gap.

# %%
regression = report.length_regression_table(results.rows)
report.show_markdown(report.length_regression_sentence(regression))

# %% tags=["hide-output"]
report.show_table(report.format_length_regression(regression))

# %% [markdown]
# ## 3. Effective rank under fast and slow thinking
#
# Mean effective rank over all layers and the four projections, fastest setting against slowest
# setting of each dataset (correct responses), with an interval on the difference.

# %%
draws = report.all_curve_draws(results, ("effective_rank",), n_resamples=params.n_resamples, seed=params.seed)
report.show_markdown(report.effective_rank_sentence(draws))
