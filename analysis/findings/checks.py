"""The checks of the study, each declared once: the paper's findings F1-F5, L and L2 beyond it,
T1-T3 of the training runs, and A1, G1 and A2-A5 on where F1's and F3's gaps come from (declared
in ``analysis.findings.gap_checks``, in the registry's order after them).

A check is data: a frozen dataclass of its scope (``analysis.findings.scopes``: ``PerModelCheck``,
``PairCheck``, ``WikiCheck``, ``TrainingRunCheck``) built with keyword arguments: its id, its claim
in plain words and as its estimand and rule, the function that computes its parts
(``analysis.findings.check_parts``), the chapters that show it, the simulated rules that measure
its error rates (``calibrated_by``: rules of ``analysis.findings.calibration.rule``, each with its
stated rate and its simulation), the figure that shows
one of its parts beyond the verdict matrix. The findings engine (``run_checks``), the verdict
matrix, the pages' paragraphs and figures, the checks page's claims and the calibration tables all
iterate over a registry: an immutable tuple of checks, ``REGISTRY`` unless another is passed.

To add a check: write its parts function and add one check to ``REGISTRY`` (or build a new
registry, ``extended(REGISTRY, check)``). A check of a new scope is one more subclass of
``scopes.Check`` with its own ``run``; what it reads comes in ``Inputs.extra``, as for the
questions T1-T3 of the training runs (``TrainingRunCheck``, inputs ``extra[training_checks.TRAINING_RUNS]``).
"""

from __future__ import annotations

from collections.abc import Iterable

from analysis.core.errors import StudyError
from analysis.findings import check_parts as cp
from analysis.findings import roles, training_checks
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.calibration import rule
from analysis.findings.gap_checks import GAP_CHAPTER, GAP_CHECKS
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId, Finding
from analysis.findings.scopes import (
    PER_MODEL,
    PER_PAIR,
    PER_TRAINING_RUN,
    STORE,
    SUMMARY_CHAPTERS,
    WIKI_FILES,
    Check,
    Inputs,
    PairCheck,
    PartFigure,
    PerModelCheck,
    Scope,
    TrainingRunCheck,
    WikiCheck,
    Words,
)

__all__ = [
    "GAP_CHAPTER",
    "SUMMARY_CHAPTERS",
    "PER_MODEL",
    "PER_PAIR",
    "PER_TRAINING_RUN",
    "Scope",
    "WIKI_FILES",
    "STORE",
    "Check",
    "Inputs",
    "PairCheck",
    "PartFigure",
    "PerModelCheck",
    "TrainingRunCheck",
    "WikiCheck",
]

Registry = tuple[Check, ...]  # the checks, in the book's order
FAMILY_CHAPTERS = ("math_reasoning", "commonsense_reasoning", "pretrained_vs_instruct")
_MARGIN = SAME_MARGIN_PERCENT


def registry_of(checks: Iterable[Check]) -> Registry:
    """A registry of ``checks`` (in that order): each a check of one scope, each id once, each
    calibrated by rules (``calibration.rule.Rule`` objects)."""
    out: list[Check] = []
    for check in checks:
        if not isinstance(check, Check):
            raise StudyError(f"{check!r} is not a check of a scope (a subclass of scopes.Check)")
        if check.id in {c.id for c in out}:
            raise StudyError(f"check {check.id!r} is declared twice")
        strays = [r for r in check.calibrated_by if not isinstance(r, rule.Rule)]
        if strays:
            raise StudyError(f"check {check.id!r}: calibrated by {strays!r}, not rules (calibration.rule.Rule)")
        out.append(check)
    return tuple(out)


def extended(registry: Registry, *checks: Check) -> Registry:
    """A new registry: ``registry`` and then ``checks`` (the registry itself is left as it is)."""
    return registry_of((*registry, *checks))


LENGTH_FIGURE = PartFigure(
    roles.SHARE,
    "share of the Simplified vs Detailed gap left at equal length",
    "Length: share of the Simplified vs Detailed gap left at equal length, with intervals",
    "No Simplified vs Detailed gap is established here, so no share is shown.",
)
_READING = (*SUMMARY_CHAPTERS, *FAMILY_CHAPTERS)
_LENGTH = (*_READING, "beyond_the_paper")
_TRAINING = ("during_training",)  # only a training profile's book has rows these checks read

REGISTRY: Registry = registry_of(
    (
        PerModelCheck(
            id=CheckId("F1"),
            paper=True,
            lead=1,
            says=((roles.F1_GAP, "larger"), (roles.EARLY_LATE, "more so in early layers")),
            words=Words(
                holds="None CoT gives larger gradients than Detailed CoT, more so in the early layers",
                fails="None CoT's gradients are not larger, or not more so in the early layers",
                unresolved="these instructions do not decide whether None CoT's gradients are larger, more so early",
            ),
            plain="Fast thinking gives larger gradients than slow thinking, more so in early layers",
            headline=roles.F1_GAP,
            claim=(
                "None CoT gives larger nuclear norms (geometric mean over instructions; the paper's mean nuclear norm "
                "shown beside) than Detailed CoT, and the gap is larger in the early layers than in the late ones"
            ),
            parts=cp.f1_parts,
            chapters=_READING,
            calibrated_by=(rule.GAP,),
        ),
        PerModelCheck(
            id=CheckId("F2"),
            paper=True,
            says=(
                (roles.NONE_ROUGHNESS, "None rougher than Simplified"),
                (roles.NONE_MEAN_CURVE_ROUGHNESS, "None's mean curve rougher than Simplified's"),
                (roles.ROUGHNESS, "Simplified rougher than Detailed"),
            ),
            words=Words(
                holds="the curves vary more from layer to layer the faster the thinking",
                fails="a faster setting's curve is smoother than a slower one's",
                unresolved="these instructions do not decide how the roughness orders",
            ),
            plain="The faster the thinking, the more the gradient varies from layer to layer",
            headline=roles.MAD_RATIO,
            claim=(
                "Curves vary more from layer to layer the faster the thinking (None > Simplified > Detailed CoT), for "
                "each of Q, K, V and O (roughness of the mean log curve; None vs Simplified on the mean curve's roughness "
                "where None's log-scale spread changes across layers)"
            ),
            parts=cp.f2_parts,
            chapters=_READING,
            calibrated_by=(rule.ROUGHNESS, rule.PAPER_MAD),
            adjust=cp.spread_decides,
        ),
        PerModelCheck(
            id=CheckId("F3"),
            paper=True,
            lead=3,
            says=(
                (roles.F3_GAP, "irrelevant larger under Detailed CoT"),
                (roles.NONE_SAME, "nearly the same under None CoT"),
            ),
            words=Words(
                holds="under Detailed CoT irrelevant responses give larger gradients, under None CoT nearly the same",
                fails="the Detailed-CoT gap is too small, or the None-CoT curves differ",
                unresolved="these instructions do not decide the two settings' separations",
            ),
            plain="Slow thinking, not fast, gives irrelevant responses larger gradients than correct ones",
            headline=roles.F3_GAP,
            claim=(
                "Under Detailed CoT irrelevant responses give curves (geometric mean of nuclear norms; the paper's mean "
                f"nuclear norm shown beside) clearly larger than correct ones (by more than {_MARGIN}); under None CoT the "
                f"two curves are nearly the same (the root-mean-square over layers of the per-layer log ratio within {_MARGIN})"
            ),
            parts=cp.f3_parts,
            chapters=_READING,
            calibrated_by=(rule.GAP, rule.SAME),
            note=cp.identical_note,
        ),
        PairCheck(
            id=CheckId("F4"),
            paper=True,
            says=((roles.SIZE_EXCESS, "instruct no better than base"),),
            words=Words(
                holds="the instruct model separates correct from irrelevant no better than its base",
                fails="the instruct model separates them better than its base",
                unresolved="these instructions do not decide which model separates them better",
            ),
            plain="Instruction tuning does not sharpen how gradients tell irrelevant from correct responses",
            headline=roles.SIZE_RATIO,
            claim=(
                "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
                "model: the size of its separation (root-mean-square over layers of the per-layer log ratio of geometric "
                f"means of nuclear norms, irrelevant over correct, whatever its direction) exceeds the base's by less than "
                f"{_MARGIN} (the signed ratios and the paper's mean nuclear norm shown beside)"
            ),
            parts=cp.f4_parts,
            chapters=_READING,
            calibrated_by=(rule.NOT_BETTER,),
        ),
        WikiCheck(
            id=CheckId("F5"),
            paper=True,
            says=(
                (roles.SHARES, "Wiki keeps more of its roughness"),
                (roles.WIKI_SAME, "Wiki correct and irrelevant nearly the same"),
            ),
            words=Words(
                holds="longer Wiki responses do not smooth the curves as slow thinking does",
                fails="longer Wiki responses smooth the curves as much as slow thinking, or their correct and irrelevant curves differ",
                unresolved="these instructions do not decide how much longer Wiki responses smooth the curves",
            ),
            plain="Longer knowledge responses do not smooth the layer curves as slow thinking does",
            headline=roles.SHARES,
            claim=(
                "Longer Wiki responses do not smooth the curves as much as slow thinking does (Detailed vs Simplified "
                "CoT: the share of its noise-corrected roughness a curve keeps from 100 to 1000 Wiki words exceeds the "
                "share it keeps from Simplified to Detailed CoT, where both shorter curves' roughness is established), "
                f"and correct vs irrelevant Wiki curves are nearly the same (the root-mean-square over layers of the "
                f"per-layer log ratio within {_MARGIN})"
            ),
            parts=cp.f5_parts,
            chapters=(*SUMMARY_CHAPTERS, "wiki_knowledge"),
            calibrated_by=(rule.SHARE, rule.SAME),
        ),
        PerModelCheck(
            id=CheckId("L"),
            says=((roles.CONTENT, "smaller at equal length"),),
            words=Words(
                holds="a Detailed CoT cut to the Simplified length still gives smaller gradients",
                fails="at equal length the Detailed CoT's gradients are not smaller",
                unresolved="these instructions do not decide the gap at equal length",
            ),
            plain="Content matters beyond length: a Detailed CoT cut to the Simplified length still gives smaller gradients",
            headline=roles.CONTENT,
            claim=(
                "Content matters beyond length: Detailed CoT cut to the Simplified-CoT length still gives smaller "
                "nuclear norms (geometric mean; the paper's mean nuclear norm shown beside) than Simplified CoT, where the "
                "Simplified vs Detailed gap is established"
            ),
            parts=cp.length_parts,
            chapters=_LENGTH,
            calibrated_by=(rule.GAP,),
            figure=LENGTH_FIGURE,
            after_pooling=cp.with_share,
            gate=cp.gap_established,
        ),
        PerModelCheck(
            id=CheckId("L2"),
            says=((roles.LENGTH, "larger when cut"),),
            words=Words(
                holds="cutting a Detailed CoT to the Simplified length makes its gradients larger",
                fails="cutting a Detailed CoT does not make its gradients larger",
                unresolved="these instructions do not decide what cutting does",
            ),
            plain="Length matters: cutting a Detailed CoT to the Simplified length gives larger gradients",
            headline=roles.LENGTH,
            claim=(
                "Length matters: Detailed CoT cut to the Simplified-CoT length gives larger nuclear norms (geometric "
                "mean; the paper's mean nuclear norm shown beside) than the full Detailed CoT, where the Simplified vs "
                "Detailed gap is established"
            ),
            parts=cp.length_effect_parts,
            chapters=_LENGTH,
            calibrated_by=(rule.GAP,),
            after_pooling=cp.with_share,
            gate=cp.gap_established,
        ),
        TrainingRunCheck(
            id=CheckId("T1"),
            says=((roles.BEYOND_DEPTH, "beyond depth"),),
            words=Words(
                holds="the step-0 curve predicts the weight change beyond depth",
                fails="depth predicts the weight change better than the step-0 curve",
                unresolved="these runs do not decide which predicts the weight change better",
            ),
            plain="A setting's gradient curve before training predicts where training on it changes the weights",
            claim=(
                "The step-0 nuclear-norm curve of a setting predicts where training on it changes the weights better "
                "than depth alone: its Spearman correlation across layers with the weight change after K steps exceeds "
                "the layer index's (in absolute value); that difference decides"
            ),
            parts=training_checks.t1,
            chapters=_TRAINING,
            calibrated_by=(rule.RANK_CORRELATION,),
        ),
        TrainingRunCheck(
            id=CheckId("T2"),
            says=((roles.ARM_EARLY, "early layers change more"), (roles.ARM_EARLY_LATE, "more early than late")),
            words=Words(
                holds="training on None CoT changes the early layers more",
                fails="training on None CoT does not change the early layers more",
                unresolved="these runs do not decide which arm changes the early layers more",
            ),
            plain="Training on fast thinking changes the early layers more than training on slow thinking",
            claim=(
                "Training on None CoT changes the early layers more than training on Detailed CoT, and more so than the "
                "late layers; the full Detailed CoT arm and the arm cut to the None-CoT token count (token-matched) both "
                "decide"
            ),
            parts=training_checks.t2,
            chapters=_TRAINING,
            calibrated_by=(rule.ARM_CHANGE,),
        ),
        TrainingRunCheck(
            id=CheckId("T3"),
            says=((roles.GAP_CHANGE, "persists"),),
            words=Words(
                holds="F1's gap persists through training",
                fails="F1's gap shrinks by more than the margin",
                unresolved="these runs do not decide whether F1's gap persists",
            ),
            plain="Fast thinking's larger gradient persists through training",
            claim=(
                "The None / Detailed gap in probe nuclear norms (F1) persists after K steps of training on each arm: "
                "its change since step 0 decides (the gap shrinks by less than 10%), where the gap is established at step 0"
            ),
            parts=training_checks.t3,
            chapters=_TRAINING,
            calibrated_by=(rule.PROBE_GAP,),
        ),
        *GAP_CHECKS,
    )
)
LENGTH_CHECKS = (CheckId("L"), CheckId("L2"))  # the length question (beyond the paper), answered together


def all_ids(registry: Registry = REGISTRY) -> tuple[CheckId, ...]:
    """Every check of the registry, in the book's order."""
    return tuple(c.id for c in registry)


def check_id(text: str, registry: Registry = REGISTRY) -> CheckId:
    """``text`` as the id of a check of the registry; an id the registry does not hold is refused."""
    if text not in all_ids(registry):
        raise StudyError(f"unknown check {text!r}; checks: {', '.join(all_ids(registry))}")
    return CheckId(text)


def get(text: str, registry: Registry = REGISTRY) -> Check:
    """The check of that id (``check_id``: one the registry holds)."""
    wanted = check_id(text, registry)
    return next(check for check in registry if check.id == wanted)


def claim(check_id: str, registry: Registry = REGISTRY) -> str:
    return get(check_id, registry).claim


def statistics_read(check_ids: Iterable[str], registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The per-sample statistics that the checks ``check_ids`` read beyond the nuclear norm curves."""
    return tuple(dict.fromkeys(stat for c in selected(check_ids, registry) for stat in c.reads))


def on_chapter(chapter: str, scope: Scope | None = None, registry: Registry = REGISTRY) -> tuple[CheckId, ...]:
    """The checks a chapter shows (of one scope, if given), in the book's order."""
    return tuple(c.id for c in registry if chapter in c.chapters and scope in (None, c.scope))


def selected(checks: Iterable[str] | None, registry: Registry = REGISTRY) -> list[Check]:
    """The checks of the registry among ``checks`` (None: all), in the book's order."""
    wanted = None if checks is None else set(checks)
    return [c for c in registry if wanted is None or c.id in wanted]


# --------------------------------------------------------------------------- the engine


def run_checks(
    draws: dict[str, CurveDraws],
    checks: Iterable[str] | None = None,
    *,
    registry: Registry = REGISTRY,
    identical: dict[str, frozenset] | None = None,
    verbatim: dict[str, frozenset] | None = None,
    reference: dict[str, CurveDraws] | None = None,
    pairs: dict[str, str] | None = None,
    declared: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
) -> list[Finding]:
    """Every check of the registry in ``checks`` (None: all) that the curves cover, each run by its
    scope (``scopes.Check.run``): per dataset and pooled per family, or per Wiki files. The other
    inputs are those of :class:`scopes.Inputs` (identical pairs, reference curves, model pairs,
    declared pairs, and ``extra``, what the checks of other scopes read, e.g. training runs; None:
    none)."""
    given = Inputs(
        draws,
        identical=identical or {},
        verbatim=verbatim or {},
        reference=reference or {},
        pairs=pairs or {},
        declared=declared,
        extra=extra or {},
    )
    out: list[Finding] = []
    for check in selected(checks, registry):
        out += check.run(given)
    return out
