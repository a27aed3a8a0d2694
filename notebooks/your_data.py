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
# # Your data through the same lens
#
# This page places an instruction data file among the study's reference settings on one model:
# bare answers (None CoT), short rationales (Simplified CoT) and detailed chains of thought
# (Detailed CoT), with correct and with irrelevant responses. Each sample gives one gradient per
# attention projection and layer; the page compares the nuclear norms and effective ranks of
# those gradients (defined on the methods page of the study) with the references', says which
# setting the data are closest to with a classifier whose accuracy on held-out references is
# stated, ranks the samples, and shows the same data through a randomly initialised copy of the
# model (the *scratch* control), so that what comes from training stands apart.

# %% tags=["remove-cell"]
from analysis.report import your_data_page as page_data
from analysis.report import your_data_sections as page_sections
from analysis.report.display import show
from analysis.report.notebook_parameters import given_parameters, names_defined

names_before_parameters = names_defined(globals())

# %% tags=["parameters", "remove-cell"]
data_files = []  # the user's data file(s): JSON list, JSON Lines, study or chat records
model = "smollm2-135m-instruct"
template = None  # base or instruct; None: the model registry's
n_samples = 20  # a seeded random sample of N of every file and reference condition; None: all that are stored
results_dir = "results/your_data"
reference_conditions = None  # None: None/Simplified/Detailed CoT of aqua and gsm8k, correct and irrelevant
max_length = None  # None: the extraction's default (1024 tokens)
seed = 0
n_resamples = 1000

# %% tags=["remove-cell"]
page = page_data.YourData.open("your_data", given_parameters(globals(), names_before_parameters))

# %% tags=["remove-input"]
show(page_sections.read(page))

# %% [markdown]
# ## Layer curves over the reference settings
#
# Mean nuclear norm per layer (log scale), one panel per projection. Coloured lines: the reference
# settings, averaged over the reference datasets (solid: correct responses, with 95% bands;
# dashed: irrelevant responses). Black: your data, with its 95% band.

# %% tags=["remove-input"]
show(page_sections.overlays(page))

# %% [markdown]
# ## Levels, differences across layers and similarities
#
# Mean over projections and layers, and MAD (the mean absolute difference between adjacent layers,
# averaged over projections), with 95% intervals over instructions.

# %% tags=["remove-input"]
show(page_sections.levels(page))

# %% [markdown]
# ## Which setting is your data closest to?

# %% tags=["remove-input"]
show(page_sections.placement(page))

# %% [markdown]
# Out-of-fold assignments of the reference samples (how often the classifier is right, per setting):

# %% tags=["remove-input"]
show(page_sections.confusion(page))

# %% [markdown]
# ## Data quality: what the follow-up study says, with your numbers

# %% tags=["remove-input"]
show(page_sections.quality(page))

# %% [markdown]
# ## Your samples, ranked
#
# Each sample's mean nuclear norm and mean effective rank (over projections and layers) and the
# classifier's probability of each setting, ranked by mean nuclear norm, lowest first. The five
# lowest and the five highest are shown; the files below hold the full ranking and the top and
# bottom ten, with the instruction and the response, to select samples for fine-tuning.

# %% tags=["remove-input"]
show(page_sections.ranked(page))

# %% [markdown]
# ## The scratch control: what comes from training
#
# The same file through a copy of the model's architecture with random weights (the library's
# default initialisation, fixed seed). Curves that look alike on both models come from the
# architecture and the text itself; differences come from what the model learned.

# %% tags=["remove-input"]
show(page_sections.scratch(page))
