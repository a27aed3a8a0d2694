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
# # Pre-trained vs instruct models
#
# The same data through a pre-trained (base) model and an instruction-tuned one. The paper
# compares each of its five base models with its own instruct version and finds that instruction
# tuning does not make a model better at telling correct from irrelevant responses (finding F4).
# This page pairs each instruct model with a base model, shows their layer curves one above the
# other, compares their MAD and RD per setting, and checks F4 together with the other findings.
# Definitions: [methods](../methods.md). Intervals are 95% bootstrap intervals over instructions.

# %% tags=["parameters"]
models = None  # None: the default (cpu) profile's models
conditions = None  # None: every study condition
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
    "pretrained_vs_instruct", models=models, conditions=conditions, n_samples=n_samples, max_length=max_length,
    batch_size=batch_size, device=device, results_dir=results_dir, data_dir=data_dir, seed=seed,
    n_resamples=n_resamples,
)
results = report.load_results(params.results_dir, params.models, params.conditions, params.max_length,
                              params.n_samples, params.data_dir)
report.require_rows(results)
draws = report.all_curve_draws(results, n_resamples=params.n_resamples, seed=params.seed)
curves, bands = report.curves_and_bands(draws)
pairs = report.model_pairs(results.models, results.templates)

# %% [markdown]
# ## Which models are compared

# %%
report.show_markdown(report.coverage_message(results))
report.show_table(report.pairs_table(pairs, results.templates, {m: cd.n_layers for m, cd in draws.items()}),
                  empty="No base and instruct model pair is present.")
report.show_markdown(report.confound_statement(pairs))
if report.figure_note(results.models):
    report.show_markdown(f"*{report.figure_note(results.models)}.*")

# %% [markdown]
# ## Layer curves, base above instruct
#
# Mean nuclear norm per layer (Q red, K green, V blue, O gray), one column per setting (correct
# responses), the base model in the top row and the instruct model below, 95% bootstrap bands.
# The rows have their own scales.

# %%
report.show_figures(report.pair_figures(draws, pairs, curves, bands, "nuclear_norm", params.n_samples))

# %% [markdown]
# ## MAD and RD side by side
#
# All-layer MAD (mean over Q, K, V, O) and mean |RD| between correct and irrelevant responses, for
# both models of each pair.

# %%
report.show_table(report.pair_comparison_table(draws, pairs), empty="No pair to compare.")

# %% [markdown]
# Full tables per model (MAD over early / middle / late / all layers, and RD per projection):

# %% tags=["hide-output"]
report.show_table(report.format_segment_table(report.mad_interval_table(draws)))
report.show_table(report.format_rd_table(report.rd_interval_table(draws)))

# %% [markdown]
# ## Effective rank, base above instruct

# %%
report.show_figures(report.pair_figures(draws, pairs, curves, bands, "effective_rank", params.n_samples))

# %% tags=["hide-output"]
report.show_table(report.format_segment_table(report.effective_rank_table(draws)))

# %%
report.show_markdown(report.effective_rank_sentence(draws))

# %% [markdown]
# ## The paper's findings
#
# F4 is the check of this page; the others are listed per model for comparison between the two
# kinds of model.

# %%
findings = report.findings_table(draws, results.rows, pairs=pairs)
report.show_markdown(report.claims_text(findings))
report.show_markdown(report.findings_summary(findings))
report.show_table(report.format_findings(findings))
report.show_markdown("\n\n".join(report.finding_sentence(row) for _, row in findings[findings["check"] == "F4"].iterrows()))

# %% [markdown]
# ## Beyond the paper
#
# ### One sample at a time: correct or irrelevant, base vs instruct

# %%
separability = report.separability_table(results.rows, params.n_resamples, params.seed)
report.show_table(report.format_separability(separability))
report.show_markdown(report.separability_sentence(separability))

# %% [markdown]
# ### Length control
#
# The length-control views (Detailed CoT cut to a faster setting's length) are analysed on the
# family pages; this page reads the study files only.

# %%
length_control = report.length_control_table(results.rows)
report.show_table(report.format_length_control(length_control), empty="")
report.show_markdown(report.length_control_sentence(length_control))

# %% [markdown]
# ### Length regression, per model

# %%
regression = report.length_regression_table(results.rows)
report.show_table(report.format_length_regression(regression))
report.show_markdown(report.length_regression_sentence(regression))
