"""What every stage reads: the study's declarations and its shared helpers. Nothing here imports a
later stage.

Modules:

- ``errors``: the one error base class (``StudyError``) every clear error derives from
- ``layer_stats``: the table of per-layer statistics: column, label, what it is computed from, the original
  files' field
- ``vocabulary``: the study's names: datasets and families, settings, projections, labels
- ``settings``: the extraction settings (``ExtractionSettings``), one default each
- ``registry``: the model registry: offline models, the paper's ten, pinned revisions
- ``formatting``: how numbers are written in the book: significant digits, intervals in brackets, ratios from
  their logs, one paragraph per model
- ``cache``: the cache folder (``$LAYER_GRADIENT_CACHE``), and the simulated tables kept there or committed
  (``book/_data/simulated``), keyed by the code each one runs
- ``chapters``: the book's chapters as ``_toc.yml`` lists them (torch-free)
- ``memory``: handing freed memory back to the system between large steps
- ``processes``: work spread over the cores, one process per core, the same result however many
"""
