"""Weight change of every attention projection since step 0: nuclear norm, largest singular value
and Frobenius norm of ``W_k - W_0``, computed in float64 from a full SVD, and the relative change
``||W_k - W_0||_F / ||W_0||_F``."""

from __future__ import annotations

import pandas as pd
import torch

from analysis.core.vocabulary import PROJECTIONS
from analysis.extract import gradients


def projection_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every attention projection's weight, keyed ``<layer>.<proj>``."""
    return {
        f"{layer}.{proj}": module.weight.detach().clone()
        for (layer, proj), module in gradients.attention_projections(model).items()
    }


def change_rows(model: torch.nn.Module, initial: dict[str, torch.Tensor], step: int, identity: dict) -> pd.DataFrame:
    """One row per (layer, projection): the statistics of the change since ``initial``."""
    rows = []
    projections = gradients.attention_projections(model)
    n_layers = 1 + max(layer for layer, _ in projections)
    for layer in range(n_layers):
        for proj in PROJECTIONS:
            current = projections[(layer, proj)].weight.detach()
            start = initial[f"{layer}.{proj}"].to(current.device)
            difference = current.to(torch.float64) - start.to(torch.float64)
            values = torch.linalg.svdvals(difference)
            frobenius = float(torch.linalg.vector_norm(difference))
            rows.append(
                {
                    **identity,
                    "step": step,
                    "layer": layer,
                    "proj": proj,
                    "nuclear_norm": float(values.sum()),
                    "sigma_max": float(values[0]),
                    "frobenius": frobenius,
                    "relative_frobenius": frobenius / float(torch.linalg.vector_norm(start.to(torch.float64))),
                }
            )
    return pd.DataFrame(rows)
