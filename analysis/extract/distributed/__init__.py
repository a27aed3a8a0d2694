"""The extraction over Ray. Ray is optional and imported only when a run starts.

Modules:

- ``driver``: the extraction on a Ray cluster: planning, shards, the one writer
- ``work``: the Ray actors that hold a model and compute shards
- ``summary``: what a distributed run did, with the failed samples
"""

from analysis.extract.distributed.driver import INSTALL_HINT, require_ray, run_extraction
from analysis.extract.distributed.summary import ExtractionReport, ShardFailure, index_ranges
from analysis.extract.distributed.work import WorkerLayout, shards_of, worker_layout

__all__ = [
    "INSTALL_HINT",
    "ExtractionReport",
    "ShardFailure",
    "WorkerLayout",
    "index_ranges",
    "require_ray",
    "run_extraction",
    "shards_of",
    "worker_layout",
]
