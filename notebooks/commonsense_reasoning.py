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
# # Commonsense reasoning
#
# StrategyQA, ECQA, CREAK and Sensemaking under No CoT (bare answer), Simplified CoT and Detailed
# CoT, each with correct responses and with irrelevant ones (responses of other questions). In the
# binary and two-choice tasks about half of the No-CoT "irrelevant" answers equal the correct
# answer, by construction of the shuffle, so small No-CoT differences are expected there. For every sample the
# gradients of the attention projections were computed once and stored; this page reads them and
# shows, per model, the paper's layer curves, the MAD and RD tables, effective ranks, the checks
# of the paper's findings that these data cover (F1 to F4), and three analyses beyond the paper.
# The definitions are on the [methods page](../methods.md). Every number below comes with a 95%
# bootstrap interval over instructions; a verdict says "holds" only when the interval supports it.

# %% tags=["parameters"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every condition of this family
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
    "commonsense_reasoning", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
    batch_size=batch_size, device=device, results_dir=results_dir, data_dir=data_dir, seed=seed,
    n_resamples=n_resamples,
)
results = report.load_results(params.results_dir, params.models, params.conditions, params.max_length,
                              params.n_samples, params.data_dir)
report.require_rows(results)
draws = report.all_curve_draws(results, n_resamples=params.n_resamples, seed=params.seed)
curves, bands = report.curves_and_bands(draws)

# %% [markdown]
# ## What this page reads

# %%
report.show_markdown(report.coverage_message(results))
if report.figure_note(results.models):
    report.show_markdown(f"*{report.figure_note(results.models)}.*")

# %% [markdown]
# ## Layer curves
#
# Mean nuclear norm of the gradient of each attention projection (Q red, K green, V blue, O gray)
# per layer, one panel per setting (correct responses); the second row shows the share of the
# largest singular value, s1 / nuclear norm. Shaded: 95% bootstrap bands.

# %%
report.show_figures(report.paper_figures(draws, curves, bands, params.n_samples))

# %% [markdown]
# ## Differences across layers (MAD)
#
# Mean absolute difference between adjacent layers of each mean curve, over the early, middle and
# late layers and over all layers (correct responses).

# %%
report.show_table(report.format_segment_table(report.mad_interval_table(draws)))

# %% [markdown]
# ## Correct vs irrelevant responses (RD)
#
# Relative difference (irrelevant - correct) / correct per layer; the table gives its mean absolute
# value and its mean over layers, and the layers where it is largest.

# %%
report.show_table(report.format_rd_table(report.rd_interval_table(draws)))

# %% [markdown]
# ## Effective rank
#
# The effective rank of each gradient (the exponential of the entropy of its normalised singular
# values), averaged over samples.

# %%
report.show_figures(report.effective_rank_figures(draws, curves, bands, params.n_samples))
report.show_table(report.format_segment_table(report.effective_rank_table(draws)))
report.show_markdown(report.effective_rank_sentence(draws))

# %% [markdown]
# ## The paper's findings on these data

# %%
findings = report.findings_table(draws, results.rows, checks=("F1", "F2", "F3", "F4"))
report.show_markdown(report.claims_text(findings))
report.show_markdown(report.findings_summary(findings))
report.show_table(report.format_findings(findings))

# %%
report.show_markdown("\n\n".join(report.finding_sentence(row) for _, row in findings.iterrows()))

# %% [markdown]
# ## Beyond the paper
#
# ### One sample at a time: correct or irrelevant?
#
# A logistic regression on one sample's layer-wise nuclear norms (all projections and layers),
# cross-validated with instructions kept out of the folds they are tested on.

# %%
separability = report.separability_table(results.rows, params.n_resamples, params.seed)
report.show_table(report.format_separability(separability))
report.show_markdown(report.separability_sentence(separability))

# %% [markdown]
# ### Length control
#
# Detailed CoT responses cut to the token count of the same question's No-CoT (or Simplified-CoT)
# response: if the gradients of the cut responses match the faster setting's, response length
# explains the gap; if not, the content does too.

# %%
report.show_figures(report.length_control_figures(draws, curves, bands, params.n_samples))
length_control = report.length_control_table(results.rows)
report.show_table(report.format_length_control(length_control))
report.show_markdown(report.length_control_sentence(length_control))

# %% [markdown]
# ### Length regression
#
# Log of each sample's mean nuclear norm regressed on the log of its response length, on the
# setting, and on both.

# %%
regression = report.length_regression_table(results.rows)
report.show_table(report.format_length_regression(regression))
report.show_markdown(report.length_regression_sentence(regression))
