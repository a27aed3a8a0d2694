"""Findings: from stored rows to verdicts. The engine (bootstrap, rules, intervals, pooling, the
registry's runner, which takes the registry as an argument) and the quantities the checks' parts are
made of. The checks themselves, each with its own parts function, are declared in ``analysis.checks``;
here are only the parts several checks share (``check_parts``) and those of the scope "per training
run" (``training_checks``).

Modules:

- ``metrics``: layer splits, curves, MAD, RD
- ``bootstrap``: the one bootstrap engine: estimates, their bias-corrected variances and pooling over datasets
- ``intervals``: the intervals estimates carry: t intervals, Wilson intervals of shares, per-layer bands
  (``t_band``)
- ``quantities``: the quantities of one dataset: log levels and gaps, roughness, the paper's ratios
- ``check_registry``: the registry's engine: a registry (``Registry``, an immutable tuple of checks) built,
  read and run (``run_checks``), always the registry given
- ``scopes``: the kinds of check, one frozen dataclass per scope with its typed parts and its run
- ``dataset_context``: what a per-model check reads on one dataset (``DatasetContext``): the curves, the
  dataset and the inputs beside them, one typed value for every parts function
- ``check_parts``: the parts several checks share: "nearly the same" (F3, F5), the length checks' parts
  (L, L2), F5's share contrast (each check's own parts function is in its check module)
- ``pooling``: pooling a check over a family; pairing instruct models with their base
- ``rules``: the verdict rule: parts, bounds, sides, the sample size that would resolve a part
- ``roles``: what each part of a check is to the code that reads it back (``Role``): parts are found by their
  role, never by their display name
- ``separability``: beyond the paper: can one sample tell correct from irrelevant responses (out-of-fold
  AUROC)
- ``effective_rank``: beyond the paper: the effective rank under fast against slow thinking
- ``energy_noise``: the token energy's estimates: their log bias and those left out of the split
- ``classifier``: the out-of-fold classifiers (logistic: separability and the your-data classifier; ridge,
  many labellings in one fit: G1), their grouped folds, and the AUROC
- ``length``: how much of the fast/slow gap response length explains: per-sample means, the length regression
- ``closest_setting``: the your-data classifier: which reference setting a sample is closest to, with its
  out-of-fold accuracy
- ``studentized``: bootstrap-t intervals of the paper's ratios of mean nuclear norms
- ``skew``: every rule rerun at skewed per-sample values, and the skewness of a store's values
- ``stated_rates``: each check's stated false-"holds" rate: the largest of its rules' (``rule.Rule``)
- ``power_tested``: the power statements tested: an open cell's "about N would decide" against the deciding
  run's same cell (``power_table``)
- ``population``: which instructions the profiles draw from (the non-identical None-CoT pairs), counted per
  file
- ``averaging``: a gap in log norm split into averaging over more response tokens, token size, alignment
  and shape (the decomposition per layer)
- ``gap_split``: fast thinking's gap split exactly into five steps (the phrase, the reasoning, which tokens at
  equal loss, how surprising, how many tokens), per dataset, and each step's line on its scored tokens' loss
- ``beyond_loss``: G1: out-of-fold AUROC of the pairs' curve differences with the loss covariates partialled
  out, and its sign-flip permutation test; at matched loss, the drawn and the screened pairs within the
  caliper
- ``same_tokens``: the final answer's own gradient with and without reasoning before it (beside S's reasoning
  step), after the contexts A5 compares, and the gaps A3's regression reads
- ``multiplicity``: how many of many intervals would mislead, and Holm's correction over a set of directional
  decisions (the split's family steps)
- ``regression``: the paired line of a gap on a covariate's gap over instructions, its intercept the gap at an
  equal covariate (A3's equal answer loss; each step of the split at equal scored-token loss)
- ``training_checks``: T1-T3: the parts of the training checks and the runner of their scope (per training
  run)
- ``simulated_samples``: per-sample statistics drawn with chosen effects, as the store holds them, and their
  curves: the battery's simulator
- ``battery``: what each check declares for the battery that tests every check alike: the verdicts it can
  give, what it needs, and its fixture (truth, falsity, missing), or why it is left out (``NotInBattery``)
- ``calibration/``: the rules' error rates by simulation
"""
