"""The study's checks, one module per check, named by its id and idea: each declares its registry
entry (``CHECK``: a check of its scope, ``analysis.findings.scopes``), with what it shows (its
words, figure, section, chain or layer split) and its battery fixture (the verdicts it can give and
inputs from its own simulator where its claim is true, false, or lacks what it needs;
``analysis.findings.battery``), and its parts function where it is its own. The registry is the list of
these modules (``MODULES``), in the book's order: the paper's findings F1-F5, L and L2 beyond it,
T1-T3 of the training runs, and S, G1, A3 and A5 on where F1's and F3's gaps come from.

The registry, its engine on it and the scopes' names are the package's own (``checks.get("F1")``,
``checks.REGISTRY``), from ``study_registry``.

Modules:

- ``study_registry``: the registry: the list of the check modules (``MODULES``), their checks (``REGISTRY``) and
  the engine's functions on it (``run_checks``, ``get``, ``on_chapter``)
- ``groupings``: the groups of checks a page answers together (``LENGTH_CHECKS``, ``GAP_SOURCES``), so that the
  report names no check by hand
- ``check_chapters``: the chapters that show the checks, by the groups of checks that share them
  (``GAP_CHAPTER``)
- ``training_declaration``: what T1-T3 declare alike: a check of the training runs on the chapter "During
  training", calibrated by one rule (``training_check``)
- ``rule_tables``: the error-rate tables of the study's checks' rules that the reproducibility page shows
  (``false_holds_table``, ``false_holds_by_skew``)
- ``f1_larger``: F1: fast thinking gives larger gradients than slow thinking, more so in early layers
- ``f2_rougher``: F2: the faster the thinking, the more the gradient varies from layer to layer
- ``f3_irrelevant``: F3: slow thinking, not fast, gives irrelevant responses larger gradients than correct
  ones
- ``f4_instruct``: F4: instruction tuning does not sharpen how gradients tell irrelevant from correct
  responses
- ``f5_wiki``: F5: longer knowledge responses do not smooth the layer curves as slow thinking does
- ``l_content``: L: content matters beyond length: a Detailed CoT cut to the Simplified length still gives
  smaller gradients
- ``l2_length``: L2: length matters: cutting a Detailed CoT to the Simplified length gives larger gradients
- ``t1_predicts``: T1: a setting's gradient curve before training predicts where training on it changes the
  weights
- ``t2_early_layers``: T2: training on fast thinking changes the early layers more than training on slow
  thinking
- ``t3_persists``: T3: fast thinking's larger gradient persists through training
- ``s_gap_split``: S: F1's gap split into five steps; its claim: reasoning before the answer makes the
  answer's own gradient smaller
- ``g1_beyond_loss``: G1: the layer curves tell irrelevant from correct responses beyond the loss
- ``a3_equal_loss``: A3: S's reasoning step holds also at equal answer loss
- ``a5_context``: A5: the answer's gradient after its own chain is nearly what the same words shuffled, or
  another instruction's chain, give
"""

from analysis.checks.check_chapters import FAMILY_CHAPTERS, GAP_CHAPTER
from analysis.checks.groupings import GAP_SOURCES, LENGTH_CHECKS
from analysis.checks.study_registry import (
    MODULES,
    REGISTRY,
    all_ids,
    check_id,
    claim,
    get,
    on_chapter,
    run_checks,
    selected,
    statistics_read,
)
from analysis.findings.check_registry import Registry, extended, registry_of
from analysis.findings.scopes import (
    PER_MODEL,
    PER_PAIR,
    PER_TRAINING_RUN,
    STORE,
    SUMMARY_CHAPTERS,
    WIKI_FILES,
    Chain,
    ChainStep,
    Check,
    Inputs,
    LayerSplit,
    PairCheck,
    PartFigure,
    PerModelCheck,
    Scope,
    Section,
    TrainingRunCheck,
    WikiCheck,
)

__all__ = [
    "GAP_SOURCES",
    "FAMILY_CHAPTERS",
    "GAP_CHAPTER",
    "LENGTH_CHECKS",
    "MODULES",
    "PER_MODEL",
    "PER_PAIR",
    "PER_TRAINING_RUN",
    "REGISTRY",
    "STORE",
    "SUMMARY_CHAPTERS",
    "WIKI_FILES",
    "Chain",
    "ChainStep",
    "Check",
    "Inputs",
    "LayerSplit",
    "PairCheck",
    "PartFigure",
    "PerModelCheck",
    "Registry",
    "Scope",
    "Section",
    "TrainingRunCheck",
    "WikiCheck",
    "all_ids",
    "check_id",
    "claim",
    "extended",
    "get",
    "on_chapter",
    "registry_of",
    "run_checks",
    "selected",
    "statistics_read",
]
