"""The study as a run: extraction of a profile, then the notebooks by papermill and the book build.

Modules:

- ``pipeline``: a profile as a run: the runner of its source (extraction here or on Ray, imported statistics,
  training), picked from a table, then the pages and the book
- ``book``: papermill execution of the notebooks, the pages' parts generated from the code
  (``write_generated``: the checks page's claims, the code map's tables) and the Jupyter Book build
- ``code_map``: the code map page's module tables, made from the packages' docstrings (``stage_tables``)
- ``publish``: the published book: repository and launch buttons, the published notebooks
- ``your_data_run``: the ``profile-data`` command
- ``measured``: the measured runs: a run log as one row of ``book/_data/measured.csv``, the
  execution-statistics page and the README's profile times (``python -m analysis measured``)
- ``screenshot``: the README's picture of the first page and the digest of its words
  (``make screenshot``)
"""
