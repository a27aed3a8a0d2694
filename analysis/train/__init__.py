"""Fine-tuning runs of the chapter "During training": training, checkpoints, probes, weight change.

Modules:

- ``loop``: fine-tuning with the extraction's encoding and loss; probes by the extraction at checkpoints
- ``checkpoint``: resumable checkpoints: weights, optimiser, random state, step
- ``weights``: how far each attention projection moved since step 0
- ``arms``: the arms of a training profile: a run per arm and seed
- ``run_tables``: the losses and weight changes as Parquet tables (torch-free)
- ``naming``: how runs and checkpoints are named in the store (torch-free)
"""
