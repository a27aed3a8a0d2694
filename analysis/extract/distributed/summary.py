"""What a distributed extraction did: per condition, with the samples that failed and why."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from analysis.extract import runner


@dataclass
class ShardFailure:
    """Samples that were not stored, and why."""

    model: str
    condition: str
    indices: tuple[int, ...]
    error: str


def index_ranges(indices: Sequence[int]) -> str:
    """Sample indices as compact ranges: ``0-3, 7, 9-10``."""
    parts, ordered = [], sorted(indices)
    start = previous = ordered[0] if ordered else None
    for index in ordered[1:] + [None]:
        if index is not None and previous is not None and index == previous + 1:
            previous = index
            continue
        parts.append(f"{start}" if start == previous else f"{start}-{previous}")
        start = previous = index
    return ", ".join(parts)


@dataclass
class ExtractionReport:
    """What a distributed extraction did, per condition, with the samples that failed."""

    conditions: list[runner.ConditionSummary] = field(default_factory=list)
    failures: list[ShardFailure] = field(default_factory=list)
    shards: int = 0
    shards_stored: int = 0
    restarts: int = 0
    layout: str = "no worker needed"
    hosts: set[str] = field(default_factory=set)
    load_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def records(self) -> list[dict]:
        """One plain record per (model, condition): requested, already_done, computed, skipped, seconds, failed."""
        return [
            {
                "model": s.model,
                "condition": s.condition,
                "requested": s.requested,
                "already_done": s.already_done,
                "computed": s.computed,
                "skipped": dict(s.skipped),
                "seconds": s.seconds,
                "failed": sum(
                    len(f.indices) for f in self.failures if (f.model, f.condition) == (s.model, s.condition)
                ),
            }
            for s in self.conditions
        ]

    def describe(self) -> str:
        """A per-model summary, with every failed shard listed."""
        computed = sum(s.computed for s in self.conditions)
        lines = [
            f"ray: {self.layout} on {len(self.hosts)} host(s); {self.shards_stored}/{self.shards} shards stored, "
            f"{computed} samples computed in {self.seconds:.1f} s"
            + (f"; {self.restarts} worker restart(s) after a crash" if self.restarts else "")
        ]
        for model in dict.fromkeys(s.model for s in self.conditions):
            mine = [s for s in self.conditions if s.model == model]
            skipped: dict[str, int] = {}
            for summary in mine:
                for why, n in summary.skipped.items():
                    skipped[why] = skipped.get(why, 0) + n
            done = sum(s.computed for s in mine)
            failed = [f for f in self.failures if f.model == model]
            lines.append(
                f"{model}: {len(mine)} condition(s), {done} computed, {sum(s.already_done for s in mine)} already stored, "
                f"skipped: {', '.join(f'{n} {why}' for why, n in skipped.items()) or 'none'}, "
                f"failed: {sum(len(f.indices) for f in failed)}; "
                f"{sum(s.seconds for s in mine) / done if done else math.nan:.2f} s/sample on a worker, "
                f"model loading {self.load_seconds.get(model, 0.0):.1f} s"
            )
            lines += [f"  failed {f.condition} samples {index_ranges(f.indices)}: {f.error}" for f in failed]
        if self.failures:
            lines.append("run the same command again to compute the failed samples (everything stored is kept)")
        return "\n".join(lines)
