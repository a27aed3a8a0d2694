"""Names that vulture (``make lint``) cannot see used: what only papermill, a getattr, the book's prose
or a third-party library reaches. vulture reads this file with analysis/, notebooks/ and benchmarks/
([tool.vulture] in pyproject.toml); a name listed here counts as used. Keep each entry's reason."""

# ruff: noqa: B018, F821

# Notebook parameters: papermill injects them, the page reads them back through globals()
# (report.notebook_parameters.given_parameters).
compare_dirs  # notebooks/original_comparison.py
export_file  # notebooks/reproducibility.py
deciding_dir  # notebooks/reproducibility.py

# The gpu check's parts: benchmarks/gpu_check.py names them in PARTS and calls them by getattr.
exactness
halving
training_step

# Read by transformers: a GGUF-loaded model refuses save_pretrained while it is set (extract/models.py).
_.hf_quantizer

# The public reading API of a results store, documented in book/running_the_study.md.
read_results
read_skipped

# Named by the book: the registry's extension point (analysis.checks' docstring), the source of the
# population numbers of book/methods.md.
extended
population_text

# Write simulated training runs as the store's rows and decide the rules on them, for the training
# rules' end-to-end tests.
simulated_tables
verdicts_of_tables

# Read by Selenium: the Chromium binary the README's screenshot drives (study/screenshot.py).
_.binary_location

# Read by the battery that tests every check alike (tests/test_battery.py): each check's own fixture.
_.battery
