"""Findings: from stored rows to verdicts.

``metrics`` (layer splits, layer curves, MAD, RD), ``bootstrap`` (the one resampling engine and its
intervals), ``rules`` (the paper's findings F1-F5 and the length question, per dataset and pooled),
``questions`` (separability and length regression, beyond the paper), ``closest_setting`` (the
your-data classifier), ``calibration`` (coverage and power of the rules, by simulation).
"""
