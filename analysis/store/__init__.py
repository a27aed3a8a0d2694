"""The results store and what is kept beside it.

Modules:

- ``results_store``: the results store: its layout, run keys, locks, resume and the reading API
- ``store_files``: the store's Parquet files: parts read (a damaged one named) or compacted, written
  atomically, exported as one file
- ``store_errors``: the store's errors (``StoreError``, also for its run log, and ``DamagedPart`` for a part
  that cannot be read)
- ``runlog``: the run log beside the store (``run_log.json``)

The store's reading API is the package's own (``from analysis.store import ResultsStore``).
"""

from analysis.store.results_store import ResultsStore, RunKey, read_results, read_skipped, run_labels, skip_record

__all__ = ["ResultsStore", "RunKey", "read_results", "read_skipped", "run_labels", "skip_record"]
