"""The checks page's claims are generated when the book is built, never pasted: the build writes
them (``analysis.study.book.write_generated``) before jupyter-book runs, book/checks.md includes
the file, git ignores it, and the anchors that the other pages link to (``../checks.html#check-<id>``)
are in it and resolve in the built page."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from analysis import checks
from analysis.report import verdicts
from analysis.study import book, code_map

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = re.compile(r"^```\{include\} (\S+)\n```$", re.MULTILINE)
LINKED_ANCHOR = re.compile(r"checks\.(?:html|md)#(check-[a-z0-9]+)")


def test_the_checks_page_includes_the_generated_claims_and_pastes_none():
    page = (ROOT / "book" / "checks.md").read_text()
    assert [Path("book", name) for name in INCLUDE.findall(page)] == [book.CLAIMS_FILE]
    assert "(check-" not in page and "Estimand and rule" not in page, "a pasted claim is left on the page"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(book.CLAIMS_FILE)], cwd=ROOT, check=False)
    assert ignored.returncode == 0, f"git does not ignore {book.CLAIMS_FILE}"


def test_the_build_writes_the_claims_before_jupyter_book_runs(tmp_path, monkeypatch):
    book.copy_book_sources(ROOT, tmp_path)
    assert not (tmp_path / book.CLAIMS_FILE).exists()  # never copied: each build writes its own
    written = []

    def jupyter_book(command, **_):
        written.append((tmp_path / book.CLAIMS_FILE).read_text())
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(book, "jupyter_book_command", lambda: "jupyter-book")
    monkeypatch.setattr(book.subprocess, "run", jupyter_book)
    book.build_book(tmp_path, say=lambda _: None)
    assert written == [verdicts.claims_markdown() + "\n"]
    assert (tmp_path / book.CODE_MAP_FILE).read_text() == code_map.stage_tables()  # the code map's tables


def test_every_check_has_its_anchor_in_the_claims_and_every_link_names_one():
    """Each check's entry under its anchor; the links the pages print to the checks page (the list of
    claims every chapter shows) each name an anchor of the generated claims."""
    claims = verdicts.claims_markdown()
    for check in checks.REGISTRY:
        assert f"({verdicts.anchor(check.id)})=\n**{check.id}** ({check.scope}): {check.plain}." in claims
    linked = LINKED_ANCHOR.findall(verdicts.claims_text())
    assert len(linked) == len(checks.REGISTRY) and all(f"({a})=\n" in claims for a in linked), linked
    assert verdicts.CHECKS_PAGE == "../checks.html"  # from a results page (book/notebooks/) to book/checks.md


@pytest.mark.slow
def test_the_anchors_resolve_in_the_built_checks_page(tmp_path, monkeypatch):
    """A real ``jupyter-book build`` through ``book.build_book`` of a book of the checks page and the
    pages it links to (no notebook executed): every check's anchor is an id of the built page."""
    book.copy_book_sources(ROOT, tmp_path)
    pages = ("methods", "gap_methods", "training_methods", "references")
    toc = {"format": "jb-book", "root": "book/checks", "chapters": [{"file": f"book/{p}"} for p in pages]}
    (tmp_path / "pages_toc.yml").write_text(yaml.safe_dump(toc))
    monkeypatch.setattr(book, "table_of_contents", lambda root, say, only: root / "pages_toc.yml")
    book.build_book(tmp_path, strict=False, say=lambda _: None)
    html = (tmp_path / "book" / "_build" / "html" / "book" / "checks.html").read_text()
    for check_id in checks.all_ids():
        assert f'id="{verdicts.anchor(check_id)}"' in html, check_id
