"""The extraction over Ray: ``driver`` plans and stores, ``work`` is what a worker computes,
``summary`` what the run reports. Ray is optional and imported only when a run starts."""

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
