"""The book's hand-written pages about the project: the pages that left the README are in the table
of contents (that the code map is true of the package is tests/test_code_map.py's)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_pages_that_left_the_readme_are_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {c["file"] for part in toc["parts"] for c in part["chapters"]}
    for page, title in (("running_the_study", "# Running the study"), ("code_map", "# Code map")):
        assert f"book/{page}" in files
        assert (ROOT / "book" / f"{page}.md").read_text().startswith(title + "\n")


def test_the_readme_is_short_and_names_no_commit():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 120 and len(text.split()) <= 700
    assert not re.search(r"\bcommit [0-9a-f]{7,40}\b", text)
    for page in ("running_the_study", "code_map"):
        assert f"book/{page}.md" in text
