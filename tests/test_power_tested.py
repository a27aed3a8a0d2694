"""The power statements tested: an open cell's "about N would decide" against the deciding run's cell."""

from made_findings import finding, part

from analysis.findings import power_tested, roles
from analysis.findings.rules import FAILS, HOLDS, UNRESOLVED


def open_cell(scope: str, sd: float):
    """An F1 cell not resolved at 12 instructions whose statement names about 30 (sd 0.15) or far more."""
    return finding("F1", UNRESOLVED, scope=scope, pooled=False, parts=(part(0.3, sd=sd, role=roles.F1_GAP),))


def test_a_statement_of_at_most_forty_is_tested_where_the_deciding_run_holds_its_cell():
    stated = [open_cell("aqua", 0.15), open_cell("gsm8k", 0.15), open_cell("ecqa", 2.0), open_cell("sensemaking", 0.15)]
    sizes = dict((f.scope, n) for f, n in power_tested.stated_sizes(stated))
    assert set(sizes) == {"aqua", "gsm8k", "sensemaking"} and all(20 < n <= 40 for n in sizes.values())
    decided = [
        finding("F1", HOLDS, scope="aqua", pooled=False, parts=(part(1.4, sd=0.05, n=30, role=roles.F1_GAP),)),
        finding("F1", UNRESOLVED, scope="gsm8k", pooled=False),
        finding("F1", FAILS, scope="ecqa", pooled=False),
    ]
    table = power_tested.power_table(stated, decided)
    assert list(table["scope"]) == ["aqua", "gsm8k"]
    assert list(table["decided"]) == [True, False] and list(table["deciding run"]) == ["holds", "not resolved"]
    assert list(table["its n per dataset"]) == [30, 12] and list(table["its datasets"]) == [1, 1]
    assert power_tested.untested(stated, decided) == 1  # sensemaking: not in the deciding run
