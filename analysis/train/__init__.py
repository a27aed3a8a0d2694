"""Fine-tuning runs of the chapter "During training": training, checkpoints, probes, weight change."""
