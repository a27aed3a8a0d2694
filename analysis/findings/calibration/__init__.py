"""The simulations of the rules' error rates, in the study's own design and under harder noise.
The engine imports only ``rule``; nothing here imports the registry when imported
(``rule_rates.checks_by_rule`` reads it when called).

Modules:

- ``rule``: the simulated rules, each declared once (``Rule``: its name, stated rate, one simulated run and
  the design it is simulated in), and their false "holds" and "does not hold" (``false_holds``,
  ``false_fails``)
- ``designs``: the error rates of the rules, by simulation in the study's design: the designs and one
  simulated run of each rule simulated there (``gap_holds``, ``gap_fails``, ...)
- ``rule_rates``: the tables of error rates, coverage, skew, shares and power that the methods page quotes,
  and which checks each rule stands for (``checks_by_rule``)
- ``family_rates``: the error rates of the family rules where a family's datasets differ (one with an
  effect, one without; opposite; equal), beside those of the mean alone (``family_table``)
- ``scenarios``: one-sided misses of the intervals under harder noise
- ``ratio_sizes``: the sizes of per-layer log ratios: noise-corrected mean squares for "nearly the same" and
  F4
- ``gap_calibration``: the simulated error rates of A3's and G1's rules: one run of each
  (``equal_loss_holds``, ``beyond_loss_null_holds``)
- ``control_calibration``: the simulated error rates of the "within" rule (A5, S's steps "about the
  same"): one run of each (``within_holds``, ``within_fails``)
- ``training_calibration``: the simulation of the training rules' error rates: the runs of a training design,
  one verdict per check (``simulated_verdicts``) that each training rule reads, its check's
"""

from analysis.findings.calibration.designs import (
    N_LAYERS,
    Design,
    differing_designs,
    study_designs,
    true_roughness,
)
from analysis.findings.calibration.family_rates import family_table
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
    "family_table",
    "planned_instructions",
    "power",
    "power_table",
    "share_table",
    "log_ratio_coverage_table",
    "differing_designs",
    "study_designs",
    "true_roughness",
]
