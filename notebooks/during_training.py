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
# # During training
#
# The paper and the chapters before this one look at one gradient: at the released weights,
# before any training step. Does that first gradient say anything about training? Here a model
# is fine-tuned on None CoT, on Detailed CoT of the same instructions, and on Detailed CoT cut to
# the None-CoT response length (the same instructions and the same response tokens as the None
# arm), each under several seeds; at checkpoints the gradients of held-out probe instructions are
# extracted exactly as in the other chapters, and the change of every attention projection since
# step 0 is measured. The questions, each checked like the paper's findings, are listed below with
# the runs' settings; their verdicts follow.
#
# Methods: [methods: during training](../training_methods.md). Intervals are 95% intervals over
# the probe instructions and the seeds.

# %% tags=["remove-cell"]
from analysis.report import sections, training_chapter
from analysis.report.blocks import Markdown, Table, figures
from analysis.report.display import show
from analysis.report.notebook_parameters import given_parameters, names_defined

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
profile = "training"  # the training run shown: its settings come from its run log
results_dir = None  # None: results/<profile>
data_dir = None  # unused here: the page reads the results directory only

# %% tags=["remove-cell"]
page = training_chapter.TrainingPage.open("during_training", given_parameters(globals(), names_before_parameters))

# %% tags=["remove-input"]
show(sections.summary(page))

# %% [markdown]
# ## The questions and the runs

# %% tags=["remove-input"]
show(sections.claims(page))
show(Markdown(page.setup()))

# %% [markdown]
# ## Verdicts
#
# "holds": every deciding part's interval lies on the claim's side; "too few samples": fewer than
# five instructions (for the weight change between arms: seeds) behind a part. The comparison of the
# arms' weight changes has the seed as its unit, because the weight change does not depend on the probes.
# Each seed trains on its own instructions, so the intervals cover which instructions were trained on
# as well as the order of the batches.
#
# T1 is decided against depth: the step-0 curve's Spearman correlation with the weight change minus
# the layer index's (in absolute value), both shown beside the difference; a curve that only encodes
# depth does not pass. T2 compares the None arm with the full Detailed arm and with the arm cut to the
# None-CoT token count, both deciding. T3 is decided on the change of the None / Detailed gap since
# step 0 (the gaps at step 0 and at the last step shown beside it): the gap persists when it shrinks
# by less than 10%; where the probes show no gap at step 0, there is none to persist ("not applicable").

# %% tags=["remove-input"]
show(training_chapter.verdicts_section(page))

# %% [markdown]
# ## Training loss
#
# The loss of each step's batch before its update (response tokens only, as in the extraction).

# %% tags=["remove-input"]
show(figures(training_chapter.loss_curves(page)))

# %% [markdown]
# ## Probe gradients across training
#
# Each panel: one arm trained on (rows) and one probe setting (columns); one curve per checkpoint.

# %% tags=["remove-input"]
show(figures(training_chapter.probe_curves(page)))

# %% [markdown]
# ## Where the weights moved
#
# The nuclear norm of each attention projection's change since step 0, per layer, at the last step.

# %% tags=["remove-input"]
show(figures(training_chapter.weight_change(page)))

# %% [markdown]
# ## How far the weights moved
#
# The relative change of each attention projection since step 0, ||W_K - W_0||_F / ||W_0||_F, per
# layer at the last step (geometric mean over the seeds; the band spans the seeds), and per arm over
# all layers and projections.

# %% tags=["remove-input"]
show(figures(training_chapter.relative_change(page)))
show(Table(training_chapter.relative_change_table(page)))

# %% [markdown]
# ## Error rates of these rules
#
# The share of "holds" when the claim is false, simulated in this run's design (its number of probe
# instructions, seeds and layers) and decided by the same functions, in each null scenario: with and
# without a training-set effect (each seed's instructions moving its runs), and with a step-0 curve
# and weight change that follow depth only. The last scenario is the design before each seed drew its
# own instructions (one training set for every seed); it is shown, not the design of these runs.

# %% tags=["remove-input"]
show(Table(training_chapter.error_rates(page), by=None))
