"""The halving retry: a batch that runs out of the device's memory is computed again in halves, down
to one sample, which is reported as a skip (never dropped) if it still does not fit.
"""

from __future__ import annotations

import gc

import torch

from analysis.extract import gradients, models
from analysis.extract.preparation import PreparedSample

OUT_OF_MEMORY = "out of memory"  # how a skip for lack of memory begins


def is_out_of_memory(error: BaseException) -> bool:
    """Whether an error is the device running out of memory (CUDA's error, or a RuntimeError saying so)."""
    return isinstance(error, torch.cuda.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower()
    )


def release_memory(device: torch.device) -> None:
    """Give the memory of a failed pass back to the device before the next try."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


class HalvingRetry:
    """Per-sample statistics of a batch, halving it and computing each half again on out-of-memory.

    A single sample that still does not fit is reported with the reason, never dropped. After a
    batch of N padded positions runs out of memory, later batches of N positions or more are
    split before they are tried, so one misjudged size costs one failed pass, not one per batch.
    """

    def __init__(
        self,
        loaded: models.LoadedModel,
        projections,
        pad_id: int,
        *,
        entry_stats: bool,
        keep_spectra: bool = False,
        token_energy_passes: int = 0,
    ):
        self.loaded = loaded
        self.projections = projections
        self.pad_id = pad_id
        self.entry_stats = entry_stats
        self.keep_spectra = keep_spectra
        self.token_energy_passes = token_energy_passes
        self.failed_positions: int | None = None  # smallest padded size that ran out of memory

    def compute(
        self, samples: list[PreparedSample]
    ) -> list[tuple[PreparedSample, gradients.SampleGradientStats | str]]:
        """(sample, statistics) per sample, or (sample, reason) for one that does not fit alone."""
        positions = len(samples) * max(len(s.encoded.input_ids) for s in samples)
        if len(samples) > 1 and self.failed_positions is not None and positions >= self.failed_positions:
            return self._halves(samples)
        try:
            return list(zip(samples, self._statistics(samples)))
        except Exception as error:  # noqa: BLE001 - only out-of-memory errors are handled, others re-raised
            if not is_out_of_memory(error):
                raise
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
        # outside the except block, so that the failed pass's tensors are no longer referenced
        release_memory(self.loaded.device)
        self.failed_positions = positions if self.failed_positions is None else min(self.failed_positions, positions)
        if len(samples) == 1:
            tokens = len(samples[0].encoded.input_ids)
            return [
                (
                    samples[0],
                    f"{OUT_OF_MEMORY}: one sample of {tokens} tokens does not fit on {self.loaded.device} ({message})",
                )
            ]
        return self._halves(samples)

    def _halves(self, samples: list[PreparedSample]) -> list:
        middle = (len(samples) + 1) // 2
        return self.compute(samples[:middle]) + self.compute(samples[middle:])

    def _statistics(self, samples: list[PreparedSample]) -> list[gradients.SampleGradientStats]:
        batch = gradients.make_batch(
            [s.encoded.input_ids for s in samples],
            [s.encoded.prompt_length for s in samples],
            self.pad_id,
            self.loaded.device,
            scored=[s.encoded.scored for s in samples],
            more_scored=[s.encoded.more_scored for s in samples],
            matching=[s.encoded.matching for s in samples],
        )
        return gradients.batch_statistics(
            self.loaded.model,
            batch,
            self.projections,
            entry_stats=self.entry_stats,
            keep_spectra=self.keep_spectra,
            token_energy_passes=self.token_energy_passes,
        )
