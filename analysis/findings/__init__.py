"""Findings: from stored rows to verdicts.

``metrics`` (layer splits, layer curves, MAD, RD), ``bootstrap`` (the one resampling engine and its
intervals), ``quantities`` (what one dataset's checks are built from), ``checks`` (the check registry: the
paper's findings F1-F5, the length questions L and L2 and the training questions T1-T3, each declared
once, and the engine that runs them), ``scopes`` (the kinds of check, one per scope, with their typed
parts), ``check_parts`` (each check's parts), ``pooling`` (per family, instruct-base pairs),
``rules`` (the verdict rule on a claim's parts), ``separability`` and ``effective_rank`` (beyond the
paper), ``length`` (the length regression), ``classifier`` (the out-of-fold classifier that
separability and ``closest_setting``, the your-data classifier, share, and the AUROC),
``studentized`` (bootstrap-t intervals of the paper's log ratios of arithmetic means), ``training``
(the parts of T1-T3 and the run of their scope), and the package ``calibration``
(error rates, coverage and power of the rules, by simulation: ``scenarios`` for the one-sided misses
of the intervals under hard noise, ``training_calibration`` for the rules of T1-T3).
"""
