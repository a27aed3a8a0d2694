"""The most a check's "holds" may be wrong when its claim is false, as the study states it: the
largest stated rate of the rules it is calibrated by (``check_rate``; the verdict matrix's note
prints it). Each rule states its own (``calibration.rule.Rule.stated``: 2.5%, ``PROMISED``, unless
measured higher), measured by the simulations of ``analysis.findings.calibration`` and
``analysis.findings.skew``.
"""

from __future__ import annotations

from analysis.findings import check_registry
from analysis.findings.calibration.rule import PROMISED

__all__ = ["PROMISED", "check_rate"]


def check_rate(check_id: str, registry: check_registry.Registry) -> float:
    """The most the ``registry``'s check's "holds" is wrong: the largest stated rate of the rules it is
    calibrated by."""
    return max((rule.stated for rule in check_registry.get(check_id, registry).calibrated_by), default=PROMISED)
