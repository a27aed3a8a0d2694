"""A family's verdict from its datasets as well as their mean: datasets decided in opposite directions
disagree, "about the same" needs every dataset, a directional mean is not decided against a dataset
decided the other way, and a family's cell names the datasets it pools where one does not decide
alone or one is left out."""

import dataclasses

from made_findings import dataset_part

from analysis.findings import pooling, roles, rules
from analysis.findings.rules import DISAGREE, FAILS, HOLDS, TOO_FEW, UNRESOLVED, NotApplicable, NoteKind, Outcome, Why
from analysis.report import voice

SAME = rules.SAME_MARGIN


def family_part(values: dict[str, float], **keywords) -> rules.Part:
    """The family's part pooled over datasets of these values (``pooling.pool_parts``)."""
    return pooling.pool_parts({d: [dataset_part(d, v, **keywords)] for d, v in values.items()})[0]


def mean_alone(family: rules.Part) -> rules.Part:
    """The same pooled part decided by its mean only, as before its datasets decided with it."""
    return dataclasses.replace(family, per_dataset=())


def test_a_family_of_plus_1_and_minus_1_2_is_the_datasets_disagree_never_about_the_same():
    opposite = {"aqua": 1.0, "gsm8k": -1.2}
    for claim in ({"side": "above"}, {"side": "within", "bound": SAME}, {"side": "above", "margin": SAME}):
        family = family_part(opposite, **claim)
        assert [p.outcome for _, p in family.per_dataset] == [Outcome.LARGER, Outcome.SMALLER]
        assert family.outcome is Outcome.DISAGREE and family.outcome is not Outcome.SAME, claim
        assert rules.decide([family]) is DISAGREE
    # the mean of +0.3 and -0.3 is 0 within a tight interval: alone it would say "about the same"
    cancelling = family_part({"aqua": 0.3, "gsm8k": -0.3}, side="within", bound=SAME)
    assert mean_alone(cancelling).outcome is Outcome.SAME and rules.decide([mean_alone(cancelling)]) is HOLDS
    assert cancelling.outcome is Outcome.DISAGREE and rules.decide([cancelling]) is DISAGREE


def test_a_family_is_about_the_same_only_where_every_dataset_is():
    within = {"side": "within", "bound": SAME, "sd": 0.02}
    both = family_part({"aqua": 0.0, "gsm8k": 0.01}, **within)
    assert both.outcome is Outcome.SAME and rules.decide([both]) is HOLDS
    one = family_part({"aqua": 0.0, "gsm8k": 0.12}, **within)  # gsm8k's interval leaves the margin
    assert [p.outcome for _, p in one.per_dataset] == [Outcome.SAME, Outcome.UNRESOLVED]
    assert mean_alone(one).outcome is Outcome.SAME  # the mean, 0.06, lies within it
    assert one.outcome is Outcome.UNRESOLVED and rules.decide([one]) is UNRESOLVED
    beyond = family_part({"aqua": 0.0, "gsm8k": 0.25}, **within)  # gsm8k clearly different: false
    assert beyond.outcome is Outcome.UNRESOLVED and rules.decide([beyond]) is FAILS
    # a step read as a mechanism (a margin): larger only where every dataset is larger
    step = family_part({"aqua": 0.6, "gsm8k": 0.05}, side="above", margin=SAME, sd=0.1)
    assert mean_alone(step).outcome is Outcome.LARGER and step.outcome is Outcome.UNRESOLVED
    # "nearly the same" on a mean square (F3 under None CoT): every dataset below the margin squared
    square = {"side": "below", "bound": SAME**2, "unit": rules.Unit.RMS_RATIO, "equivalence": True, "sd": 0.0005}
    square_of = {k: v for k, v in square.items() if k != "sd"}
    nearly = pooling.pool_parts(
        {
            "aqua": [dataset_part("aqua", 0.0, sd=0.001, **square_of)],
            "gsm8k": [dataset_part("gsm8k", 0.7 * SAME**2, sd=0.004, **square_of)],  # not decided
        }
    )[0]
    assert mean_alone(nearly).outcome is Outcome.SMALLER and rules.decide([mean_alone(nearly)]) is HOLDS
    assert [p.outcome for _, p in nearly.per_dataset] == [Outcome.SMALLER, Outcome.UNRESOLVED]
    assert nearly.outcome is Outcome.UNRESOLVED and rules.decide([nearly]) is UNRESOLVED
    # aqua's curves nearly the same, gsm8k's clearly different: decided in opposite directions
    apart = family_part({"aqua": 0.0, "gsm8k": 1.5 * SAME**2}, **square)
    assert mean_alone(apart).outcome is Outcome.SMALLER and rules.decide([mean_alone(apart)]) is HOLDS
    assert apart.outcome is Outcome.DISAGREE and rules.decide([apart]) is DISAGREE


def test_a_directional_family_with_a_dataset_decided_against_it_is_not_decided():
    values = {"aqua": 0.6, "gsm8k": 0.6, "math-algebra": -0.05}
    parts = {d: [dataset_part(d, v, sd=0.3 if v > 0 else 0.015)] for d, v in values.items()}
    family = pooling.pool_parts(parts)[0]
    assert [p.outcome for _, p in family.per_dataset] == [Outcome.UNRESOLVED, Outcome.UNRESOLVED, Outcome.SMALLER]
    assert mean_alone(family).outcome is Outcome.LARGER and rules.decide([mean_alone(family)]) is HOLDS
    assert family.outcome is Outcome.UNRESOLVED and rules.decide([family]) is UNRESOLVED
    # nor is it shown false by its mean while a dataset lies on the claim's side
    spread = {"aqua": 0.05, "gsm8k": 0.8, "math-algebra": 0.8}
    values = {"aqua": 0.3, "gsm8k": -1.5, "math-algebra": -1.5}
    against = pooling.pool_parts({d: [dataset_part(d, v, sd=spread[d])] for d, v in values.items()})[0]
    assert [p.outcome for _, p in against.per_dataset] == [Outcome.LARGER, Outcome.UNRESOLVED, Outcome.UNRESOLVED]
    assert mean_alone(against).contradicts() and rules.decide([mean_alone(against)]) is FAILS
    assert not against.contradicts() and against.outcome is Outcome.UNRESOLVED
    assert rules.decide([against]) is UNRESOLVED


def test_another_part_shown_false_outweighs_a_part_whose_datasets_disagree():
    apart = family_part({"aqua": 1.0, "gsm8k": -1.2})
    false = family_part({"aqua": -1.0, "gsm8k": -1.2}, role=roles.EARLY_LATE)
    assert rules.decide([apart, false]) is FAILS
    found = rules.Finding(rules.CheckId("F1"), "m", "math_reasoning", True, (false, apart))
    assert rules.decide([apart, family_part({"aqua": 1.0, "gsm8k": 1.2}, role=roles.EARLY_LATE)]) is DISAGREE
    assert found.decided_by(roles.F1_GAP) is false
    disagreeing = dataclasses.replace(
        found, parts=(family_part({"aqua": 1.0, "gsm8k": 1.2}, role=roles.EARLY_LATE), apart)
    )
    assert disagreeing.verdict is DISAGREE and disagreeing.decided_by(roles.EARLY_LATE) is apart


def test_a_family_part_that_holds_one_dataset_only_is_labelled_with_it():
    gap = {d: dataset_part(d, 1.0) for d in ("aqua", "gsm8k")}
    extra = dataset_part("aqua", 0.5, role=roles.EARLY_LATE, name="early / late", decides=False)
    found = pooling.family_findings(rules.CheckId("F1"), "m", {"aqua": [gap["aqua"], extra], "gsm8k": [gap["gsm8k"]]})
    family = next(f for f in found if f.pooled)
    pooled_extra = family.part(roles.EARLY_LATE)
    assert pooled_extra is not None and pooled_extra.datasets == ("aqua",)
    assert voice.part_name(pooled_extra) == "early / late (aqua only)"
    assert voice.part_name(family.part(roles.F1_GAP)) == gap["aqua"].name  # two datasets: the family's
    aqua = next(f for f in found if f.scope == "aqua")
    assert voice.part_name(aqua.part(roles.EARLY_LATE)) == "early / late"  # a dataset's own part: no label
    assert family.note(NoteKind.FAMILY_DATASETS) is None  # every dataset pooled, each deciding alone


def test_a_family_names_its_datasets_not_applicable_too_few_or_left_out():
    def gate(parts):
        reversed_ = parts[0].value < 0
        return NotApplicable(Why.PRECONDITION, "the gap is reversed here") if reversed_ else None

    by_dataset = {
        "aqua": [dataset_part("aqua", 1.0)],
        "gsm8k": [dataset_part("gsm8k", -0.2)],
        "math-algebra": [dataset_part("math-algebra", 1.0, n=3)],
    }
    found = pooling.family_findings(
        rules.CheckId("L"),
        "m",
        by_dataset,
        how=pooling.Pooling(gate=gate),
        absent={
            "math-counting": "a condition the check reads is not stored",
            "math-geometry": "a condition the check reads is not stored",
            "ecqa": "not this family",
        },
    )
    family = next(f for f in found if f.pooled)
    note = family.note(NoteKind.FAMILY_DATASETS)
    assert note is not None and note.items == ("gsm8k", "math-algebra", "math-counting", "math-geometry")
    assert note.text == (
        "pooled over aqua, gsm8k, math-algebra; gsm8k alone: not applicable (the gap is reversed here); "
        "math-algebra alone: too few instructions (3); not pooled: math-counting, math-geometry (a condition "
        "the check reads is not stored)"
    )
    assert family.verdict is TOO_FEW  # a dataset of too few instructions leaves the family undecided


def test_an_every_dataset_part_needs_the_instructions_of_its_slowest_dataset():
    within = {"side": "within", "bound": SAME}
    family = family_part({"aqua": 0.0, "gsm8k": 0.03}, sd=0.06, **within)
    sizes = [rules.instructions_for_power(p) for _, p in family.per_dataset if not p.supports()]
    assert sizes and None not in sizes
    assert rules.instructions_for_power(family) == max(sizes)
