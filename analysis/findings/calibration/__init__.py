"""The simulations of the rules' error rates, in the study's own design and under harder noise.

``rule``: the simulated rules, each declared once (``Rule``: its name, stated rate, one simulated
run and design; the checks of the registry point at them); ``designs``: the simulated designs of
the study and one simulated run of each of its rules (their false "holds" and false "does not
hold"); ``rule_rates``: the tables the methods page quotes (error rates, coverage, skew, shares,
power); ``scenarios``: one-sided misses of the intervals under harder noise; ``ratio_sizes``: the
sizes of per-layer log ratios for "nearly the same" and F4; ``gap_calibration`` and
``training_calibration``: the rules of A1, A3 and G1 and of the training checks. The engine they
simulate (checks, parts, rules, pooling, quantities) is ``analysis.findings``. ``checks`` imports
``rule``; nothing here imports the registry when imported (``rule_rates.checks_by_rule`` reads it
when called).
"""

from analysis.findings.calibration.designs import (
    N_LAYERS,
    Design,
    differing_designs,
    study_designs,
    true_roughness,
)
from analysis.findings.calibration.rule import (
    FAILS_RULES,
    RULES,
    Rule,
    false_fails,
    false_holds,
)
from analysis.findings.calibration.rule_rates import (
    checks_by_rule,
    conditional_coverage_table,
    coverage_table,
    equivalence_power,
    false_holds_table,
    log_ratio_coverage_table,
    planned_instructions,
    power,
    power_table,
    share_table,
)

__all__ = [
    "FAILS_RULES",
    "N_LAYERS",
    "RULES",
    "Design",
    "Rule",
    "checks_by_rule",
    "conditional_coverage_table",
    "coverage_table",
    "equivalence_power",
    "false_fails",
    "false_holds",
    "false_holds_table",
    "planned_instructions",
    "power",
    "power_table",
    "share_table",
    "log_ratio_coverage_table",
    "differing_designs",
    "study_designs",
    "true_roughness",
]
