"""Error rates of A1 and G1, simulated in the study's design through the functions the book uses.

- ``averaging`` (A1): every instruction answered under None CoT (a few tokens, noisy) and Detailed
  CoT (hundreds of tokens, quiet) with token counts that vary by instruction, and a Frobenius norm
  that is averaging and nothing else: log ||G||_F = level - 1/2 log R + noise, the same token size
  and alignment in both settings. A1's quantity (``averaging.token_terms``, ``paired_contrast``)
  must then say "holds" at most 2.5% of the time.
- ``beyond loss`` (G1): correct and irrelevant responses per instruction whose loss tells them
  apart (an AUROC near 0.9) and whose layer curves carry the loss and nothing more, each log
  nuclear norm a linear function of the loss plus noise (``CURVE_NOISE``: from nearly none to as
  large as the loss's own spread). G1's scores (``beyond_loss.aurocs``) must then say "holds" at
  most 2.5% of the time.

``calibration.false_holds`` runs these rules in its designs (``calibration.Design``).
"""

from __future__ import annotations

import numpy as np

from analysis.findings import averaging, beyond_loss
from analysis.findings.bootstrap import Estimate, pooled, resample_counts
from analysis.findings.rules import HOLDS, Part, decide

RULES = ("averaging", "beyond loss")
TOKENS = {"fast": 4.0, "slow": 300.0}  # typical response tokens of None and Detailed CoT
TOKEN_SD = 0.5  # spread of log token counts over instructions
GAP_LAYERS = 6
LOSS_GAP = 1.8  # irrelevant less correct loss, in units of the loss's noise: an AUROC near 0.9
CURVE_NOISE = (0.05, 0.5, 1.0)  # noise of the curves around the loss's linear function, per repetition in turn


def _averaging_estimate(rng, design, n_resamples: int) -> Estimate:
    """A1's pooled quantity where the Frobenius gap is averaging alone."""
    per_dataset = []
    for h, (n, fast_sd, slow_sd) in enumerate(zip(design.counts, design.fast_sd, design.slow_sd)):
        level = rng.normal(0.0, design.instruction_sd, n)
        weights = resample_counts(n, n_resamples, rng)
        values = []
        for setting, sd in (("fast", fast_sd), ("slow", slow_sd)):
            log_tokens = np.log(np.maximum(1.0, np.round(TOKENS[setting] * np.exp(rng.normal(0, TOKEN_SD, n)))))
            log_f = (level - 0.5 * log_tokens)[:, None] + rng.normal(0.0, sd, (n, GAP_LAYERS))
            values.append(averaging.token_terms(log_f, None, log_tokens)[averaging.REST].mean(axis=1))
        per_dataset.append(averaging.paired_contrast(values[0], weights, values[1], weights, dataset=f"d{h}"))
    found = pooled(per_dataset)
    if found is None:
        raise ValueError("no dataset to pool: the design has none")
    return found


def _loss_only_parts(rng, design, n_resamples: int, curve_noise: float) -> list[Part]:
    """G1's pooled deciding parts where the curves are the loss plus noise."""
    per_dataset = []
    for h, n in enumerate(design.counts):
        level = rng.normal(0.0, 1.0, n)
        slope = rng.normal(1.0, 0.3, 4 * GAP_LAYERS)
        features = {"ids": np.arange(n)}
        for label, response in enumerate(("correct", "irrelevant")):
            loss = level + LOSS_GAP * label + rng.normal(0.0, 1.0, n)
            curves = loss[:, None] * slope + rng.normal(0.0, curve_noise, (n, slope.size))
            features[f"{response} {beyond_loss.LOSS_ONLY}"] = loss
            features[f"{response} {beyond_loss.CURVES}"] = curves
            features[f"{response} length"] = rng.normal(np.log(300.0), 0.3, n)
        per_dataset.append(beyond_loss.aurocs(features, resample_counts(n, n_resamples, rng), f"d{h}"))
    parts = []
    for name, against in zip(beyond_loss.DECIDING, (beyond_loss.LOSS_ONLY, beyond_loss.LOSS_AND_LENGTH)):
        gaps = [
            Estimate(
                e[beyond_loss.CURVES].value - e[against].value,
                e[beyond_loss.CURVES].draws - e[against].draws,
                e[against].strata,
            )
            for e in per_dataset
        ]
        parts.append(Part(name, pooled(gaps), "above", 0.0))
    return parts


def holds(rule: str, rng, design, n_resamples: int, *, repetition: int = 0) -> bool:
    """Whether one simulated run of ``rule``, its claim false, says "holds"."""
    if rule == "averaging":
        return decide([Part(averaging.A1_PART, _averaging_estimate(rng, design, n_resamples), "above", 0.0)]) == HOLDS
    if rule == "beyond loss":
        noise = CURVE_NOISE[repetition % len(CURVE_NOISE)]
        return decide(_loss_only_parts(rng, design, n_resamples, noise)) == HOLDS
    raise ValueError(f"unknown rule {rule!r}; rules: {', '.join(RULES)}")
