"""The book's hand-written pages about the project: the code map names every module on disk (and
nothing else), and the pages that left the README are in the table of contents."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analysis"


def modules_on_disk() -> set[str]:
    return {
        p.relative_to(PACKAGE).with_suffix("").as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }


def modules_in_code_map() -> list[str]:
    text = (ROOT / "book" / "code_map.md").read_text()
    return re.findall(r"^\| `([\w/]+)` \|", text, re.MULTILINE)


def test_the_code_map_names_every_module_once_and_no_other():
    named = modules_in_code_map()
    assert len(named) == len(set(named)), [m for m in named if named.count(m) > 1]
    assert set(named) == modules_on_disk(), {
        "missing from the code map": sorted(modules_on_disk() - set(named)),
        "not on disk": sorted(set(named) - modules_on_disk()),
    }


def test_the_pages_that_left_the_readme_are_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {c["file"] for part in toc["parts"] for c in part["chapters"]}
    for page, title in (("running_the_study", "# Running the study"), ("code_map", "# Code map")):
        assert f"book/{page}" in files
        assert (ROOT / "book" / f"{page}.md").read_text().startswith(title + "\n")


def test_the_readme_is_short_and_names_no_commit():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 120
    assert not re.search(r"\bcommit [0-9a-f]{7,40}\b", text)
    for page in ("running_the_study", "code_map"):
        assert f"book/{page}.md" in text
