"""The hand-written pages say each thing once and type no measurement: no date, no duration and no
size (those live on the generated execution-statistics page, remade by every run), the prose pages
stay short, and every page or label they link to exists. Each page is its own case, so a failure
names the page."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOT_PROSE = {"references.md"}  # the bibliography; generated pages live under book/_generated/
PROSE = sorted(p for p in BOOK.glob("*.md") if p.name not in NOT_PROSE)
PAGES = [ROOT / "README.md", *PROSE]
MAX_WORDS = 15_000

ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
MEASURED = re.compile(
    r"\b\d+(?:[.,]\d+)?(?:\s|-)?(?:"
    r"h|hours?|min|minutes?|s|secs?|seconds?|ms|milliseconds?"  # a duration
    r"|[kKMGT]i?B|bytes"  # a size (a number of bytes per weight is a rule, not a measurement)
    r")\b(?!\.[a-z])"  # "2 s.e." is a number of standard errors
)
PER_WEIGHT = re.compile(r"\d+ bytes per weight")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s#]+\.md)(?:#[^)\s]*)?\)")
REF = re.compile(r"\{ref\}`(?:[^`<]*<([^>`]+)>|([^`<]+))`")
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$", re.MULTILINE)


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_no_page_types_a_date(page):
    found = ISO_DATE.findall(page.read_text())
    assert not found, f"{name(page)} types dates {found}: the execution statistics page keeps when"


def _generated_cells() -> list[str]:
    """The README's profile times, each the data file's (``measured.profile_cells``; tests/test_measured.py)."""
    from analysis.study import measured

    return list(measured.profile_cells(measured.read_measured(ROOT / measured.MEASURED_FILE)).values())


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_no_page_types_a_duration_or_a_size(page):
    text = PER_WEIGHT.sub("", page.read_text())
    for cell in _generated_cells() if page.name == "README.md" else ():
        text = text.replace(f"| {cell} |", "|")
    found = [m.group(0) for m in MEASURED.finditer(text)]
    assert not found, f"{name(page)} types measurements {found}: link to execution_statistics.md instead"


def test_the_measurement_patterns_catch_what_a_page_might_type():
    typed = "47 min 13 s, 6.4 GB, 1.3 GB, 417 MB, 20.4 MB/s, 7.5 s, 15 ms, about 30 minutes, 1 h, 2026-12-05"
    assert ISO_DATE.findall(typed) == ["2026-12-05"]
    assert [m.group(0) for m in MEASURED.finditer(typed)] == [
        "47 min",
        "13 s",
        "6.4 GB",
        "1.3 GB",
        "417 MB",
        "20.4 MB",
        "7.5 s",
        "15 ms",
        "30 minutes",
        "1 h",
    ]
    fine = "5 samples, 30 layers, 1.5B and 2B models, SmolLM2-135M, $s_1$, 16 bytes per weight, 2 s.e., F1's"
    assert not MEASURED.findall(PER_WEIGHT.sub("", fine))


def test_the_prose_pages_stay_short():
    words = {p.name: len(p.read_text().split()) for p in PROSE}
    assert sum(words.values()) <= MAX_WORDS, f"{sum(words.values())} words > {MAX_WORDS}: {words}"


def _toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return {c["file"] for part in toc["parts"] for c in part["chapters"]}


def _labels() -> set[str]:
    return {label for p in BOOK.glob("*.md") for label in LABEL.findall(p.read_text())}


@pytest.mark.parametrize("page", PROSE, ids=name)
def test_every_link_of_a_page_names_a_page_and_every_ref_a_label(page):
    """A relative link names a page that exists or that the table of contents lists (a page the build
    generates); a ``{ref}`` names a label one of the book's pages defines."""
    text = FENCE.sub("", page.read_text())
    toc = _toc_files()
    missing = [
        target
        for target in LINK.findall(text)
        if not (page.parent / target).exists()
        and (page.parent / target).resolve().with_suffix("").relative_to(ROOT).as_posix() not in toc
    ]
    labels = _labels()
    unknown = [a or b for a, b in REF.findall(text) if (a or b).strip() not in labels]
    assert not missing and not unknown, f"{name(page)}: missing pages {missing}, unknown labels {unknown}"
