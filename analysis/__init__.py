"""Layer-wise gradient spectra of LLMs under fast vs. slow thinking data.

The stages, in the order the data flow through them: each imports only from itself and the stages
before it (import-linter's layers contract in ``pyproject.toml``).

Modules:

- ``core/``: what every stage reads: the study's declarations (vocabulary, statistics, models, chapters,
  extraction settings) and three small shared helpers
- ``data/``: the study's conditions and data files, their records, and the samples a run draws
- ``profiles``: run profiles: which models, conditions and extraction settings a run covers
- ``store/``: the results store, its Parquet files and errors, and the run log beside it
- ``extract/``: per-sample gradients and their singular values, computed (here or on Ray) or imported from the
  original release
- ``train/``: the fine-tuning runs of the chapter "During training"
- ``findings/``: the checks' engine (curves, bootstrap, rules, pooling) and their parts, and the rules'
  simulated error rates
- ``checks/``: the study's checks, one module per check (its registry entry), and the registry: the list of
  them
- ``report/``: what a book page shows: its data, sections, tables, figures and words
- ``study/``: a profile as a run: extraction, the notebooks and the book
- ``cli/``: the commands (``python -m analysis``, ``layer-gradient``)
"""

__version__ = "0.1.0"
