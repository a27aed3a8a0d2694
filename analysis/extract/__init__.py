"""Extraction: data files -> prompts -> per-sample gradients -> singular values -> results store.

``architectures`` keeps one adapter per architecture family, ``prompts`` builds the text and the
response mask, ``models`` loads a model, ``preparation`` encodes a run's samples and groups them
into batches of similar length, ``batching`` plans batches to the device's memory, ``halving``
computes a batch that runs out of it again in halves, ``gradients`` computes per-sample gradients
of the attention projections, ``spectra`` their singular values and one function per statistic of
``analysis.core.layer_stats``, ``runner`` drives one extraction into the store, ``original``
reads the original study's released statistics instead (``token_counts`` adds their response
token counts from each model's tokenizer), ``plain`` is the original study's plain procedure (for
checks), ``threads`` chooses torch's CPU threads from the cores free when a run starts,
``distributed`` the same extraction over Ray; ``screen`` reads the losses of further instructions
for G1's matched pairs, and ``screens`` keeps what it read beside the store.
"""
