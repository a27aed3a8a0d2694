"""Extraction: data files -> prompts -> per-sample gradients -> singular values -> results store.

Modules:

- ``architectures``: one adapter per architecture family: projection names, attention implementation
- ``prompts``: templates and response masks
- ``models``: model loading (hub at a pinned revision, offline GGUF dequantised)
- ``preparation``: a run's samples encoded (those with no scored token left as skips) and grouped into batches
  of similar length
- ``batching``: GPU batch planning from the memory the device reports
- ``halving``: a batch that runs out of device memory computed again in halves, down to one sample reported as
  a skip
- ``gradients``: per-sample gradients of the attention projections (hooks in one context manager)
- ``spectra``: exact singular values and one function per statistic
- ``token_energy``: the token energy: each backward pass's token weights (exact or random signs), squared
  norms from Gram matrices
- ``loss_matching``: the loss-matched draws: chain tokens scored in place of the answer's, each within a caliper
  of one answer token's loss, drawn between the forward pass and the further backward passes
- ``runner``: the resumable extraction of a (model, condition) into the store, a loss-matched condition in one
  pass with its reference
- ``screen``: the loss screen: forward passes over instructions beyond the draw until a dataset has G1's
  matched pairs, then their gradients
- ``screens``: the loss screens kept beside the store: per model and dataset, the instructions screened for
  G1's matched pairs, their two mean losses and which matched
- ``plain``: the original study's plain procedure (materialised gradient, full SVD), for checks
- ``original_import``: ``import-original``: the released statistics read into the store
- ``original_sources``: where the released files are: a tree, archives, the hub
- ``original_report``: what an import did, per file and in one summary line
- ``token_counts``: R of imported rows from each model's tokenizer; ``add-token-counts`` on a store
- ``threads``: torch CPU threads from the cores free when a run starts
- ``distributed/``: the extraction on a Ray cluster
"""
