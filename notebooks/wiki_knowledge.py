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
# # Wiki knowledge
#
# Descriptions of popular Wikipedia entities with responses of about 100, 500 and 1000 words, and
# of unpopular (long-tail) entities, each with correct responses and with irrelevant ones
# (descriptions of other entities). Longer responses here add knowledge, not reasoning steps: the
# question is whether length alone reproduces the slow-thinking pattern of the reasoning data
# (finding F5). The page reads the stored per-sample gradient statistics and shows, per model,
# the layer curves, the MAD and RD tables, effective ranks, the F5 check and analyses beyond the
# paper. Definitions: [methods](../methods.md). Intervals are 95% bootstrap intervals over
# instructions.

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
    "wiki_knowledge", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
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
# Mean nuclear norm per layer of the Q (red), K (green), V (blue) and O (gray) gradients, one panel
# per response length (correct responses), s1 / nuclear norm in the second row, 95% bootstrap bands.

# %%
report.show_figures(report.paper_figures(draws, curves, bands, params.n_samples))

# %% [markdown]
# ## Differences across layers (MAD)

# %%
report.show_table(report.format_segment_table(report.mad_interval_table(draws)))

# %% [markdown]
# ## Correct vs irrelevant responses (RD)

# %%
report.show_table(report.format_rd_table(report.rd_interval_table(draws)))

# %% [markdown]
# ## Effective rank

# %%
report.show_figures(report.effective_rank_figures(draws, curves, bands, params.n_samples))
report.show_table(report.format_segment_table(report.effective_rank_table(draws)))
report.show_markdown(report.effective_rank_sentence(draws))

# %% [markdown]
# ## The paper's finding F5 on these data
#
# F5 compares the Wiki numbers with the reasoning data of the same model: the MAD ratio of the
# longest to the shortest Wiki responses against the Detailed / No CoT ratio, and the Wiki
# correct-vs-irrelevant |RD| against that of Detailed CoT.

# %%
reference = report.f5_reference(params.results_dir, results.models, params.max_length, params.n_samples,
                                params.n_resamples, params.seed)
report.show_markdown(report.f5_reference_sentence(reference))
findings = report.findings_table(draws, results.rows, checks=("F5",), reference=reference)
report.show_markdown(report.claims_text(findings))
report.show_markdown(report.findings_summary(findings))
report.show_table(report.format_findings(findings))
report.show_markdown("\n\n".join(report.finding_sentence(row) for _, row in findings.iterrows()))

# %% [markdown]
# ## Beyond the paper
#
# ### One sample at a time: correct or irrelevant?

# %%
separability = report.separability_table(results.rows, params.n_resamples, params.seed)
report.show_table(report.format_separability(separability))
report.show_markdown(report.separability_sentence(separability))

# %% [markdown]
# ### Length control
#
# The length-control conditions cut Detailed CoT responses to the length of a faster setting of
# the same question; Wiki has no chain-of-thought settings, so the regression below carries the
# length question here.

# %%
length_control = report.length_control_table(results.rows)
report.show_table(report.format_length_control(length_control), empty="")
report.show_markdown(report.length_control_sentence(length_control))

# %% [markdown]
# ### Length regression
#
# Log of each sample's mean nuclear norm regressed on the log of its response length, on the
# length setting, and on both.

# %%
regression = report.length_regression_table(results.rows)
report.show_table(report.format_length_regression(regression))
report.show_markdown(report.length_regression_sentence(regression))
