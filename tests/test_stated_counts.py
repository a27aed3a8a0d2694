"""The pages state the counts the code has: each profile's number of conditions where a profile
table names it, and the conditions a command lists. No page keeps a count a run or a registry
change has made stale."""

import re
from pathlib import Path

from analysis import data, profiles

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md")), *sorted((ROOT / "notebooks").glob("*.py"))]
COUNT = re.compile(r"(\d+) conditions")


def profile_rows():
    """(page, profile, row) for each table row of a page that opens with a profile's name."""
    for page in PAGES:
        for line in page.read_text().splitlines():
            row = re.match(r"^#?\s*\| `([\w-]+)`", line)
            if row and row.group(1) in profiles.PROFILES:
                yield page.name, row.group(1), line


def test_every_profile_row_states_its_profiles_count_of_conditions():
    stated = [(page, name, COUNT.search(row)) for page, name, row in profile_rows()]
    wrong = [
        (page, name, int(found.group(1)), len(profiles.PROFILES[name].conditions))
        for page, name, found in stated
        if found is not None and int(found.group(1)) != len(profiles.PROFILES[name].conditions)
    ]
    assert not wrong, wrong
    assert {name for _, name, found in stated if found is not None} >= {"cpu", "cpu-full", "decide"}


def test_data_list_is_said_to_list_the_conditions_it_lists():
    stated = [int(m) for page in PAGES for m in re.findall(r"lists the (\d+) conditions", page.read_text())]
    assert stated and set(stated) == {len(data.conditions_matching(length_control=True))}


def test_every_profile_row_states_its_profiles_instructions():
    """A row's "N instructions" / "N samples", or its first cell that opens with a number, is the
    profile's instructions per dataset: the decide row once said 30 where the profile takes 16."""
    stated = []
    for page, name, row in profile_rows():
        n = profiles.PROFILES[name].extraction.n_samples
        cells = [c.strip() for c in row.split("|")[2:]]
        said = re.search(r"(\d+) (?:instructions|samples) (?:of|per)\b", row) or next(
            (m for c in cells if (m := re.match(r"(\d+)(?:,|$)", c))), None
        )
        if said is not None and n is not None:
            stated.append((page, name, int(said.group(1)), n))
    wrong = [s for s in stated if s[2] != s[3]]
    assert not wrong, wrong
    assert {(page, name) for page, name, _, _ in stated} >= {("intro.py", "decide"), ("README.md", "decide")}
