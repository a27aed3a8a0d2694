"""Extraction: data files -> prompts -> per-sample gradients -> singular values -> results store.

``prompts`` builds the text and the response mask, ``models`` loads a model, ``batching`` plans
batches to the device's memory, ``gradients`` computes per-sample gradients of the attention
projections, ``spectra`` their singular values, ``runner`` drives one extraction into the store,
``plain`` is the original study's plain procedure (for checks), ``threads`` chooses torch's CPU
threads from the cores free when a run starts, ``distributed`` the same extraction over Ray.
"""
