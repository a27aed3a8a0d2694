"""The study is citable: CITATION.cff (Citation File Format 1.2.0) names the study and the paper it
reproduces, every book carries it at its root and says so in its footer."""

import re
from pathlib import Path

import yaml

from analysis.study import book, publish

ROOT = Path(__file__).resolve().parents[1]
CITATION = ROOT / publish.CITATION_FILE
ARXIV_ID = "2410.23743"


def _citation() -> dict:
    return yaml.safe_load(CITATION.read_text())


def test_the_citation_file_parses_and_names_the_study_and_the_paper_it_reproduces():
    citation = _citation()
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["message"] and citation["authors"]
    project = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert citation["title"] == project["title"]
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert citation["version"] == version
    (paper,) = citation["references"]
    assert paper["title"].startswith("What Happened in LLMs Layers when Trained for Fast vs. Slow Thinking")
    assert [a["family-names"] for a in paper["authors"]] == ["Li", "Li", "Zhou"] and paper["year"] == 2025
    assert any(ARXIV_ID in i["value"] for i in paper["identifiers"]) and ARXIV_ID in paper["url"]
    assert ARXIV_ID in (ROOT / "book" / "references.bib").read_text()  # the book cites the same paper


def test_every_book_carries_the_citation_file_and_its_footer_says_so():
    project = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert publish.CITATION_FILE in project["sphinx"]["config"]["html_extra_path"]  # copied to the site's root
    assert publish.CITATION_FILE in book.BOOK_SOURCES  # and into a book built in another folder
    footer = project["html"]["extra_footer"]
    assert footer.startswith("Cite this study") and publish.CITATION_FILE in footer
    published = publish.book_config("someone/some-study", book_url="https://x.example.org/study/training")
    assert 'href="https://x.example.org/study/training/CITATION.cff"' in published["html"]["extra_footer"]


def test_the_readme_says_how_to_cite():
    readme = (ROOT / "README.md").read_text()
    citing = readme.split("## Citing", 1)[1].split("\n## ", 1)[0]
    assert publish.CITATION_FILE in citing and ARXIV_ID in citing


def test_the_sphinx_configuration_jupyter_book_makes_carries_the_footer(tmp_path):
    from jupyter_book.config import get_final_config

    published = tmp_path / "_config.yml"
    overlay = publish.book_config("someone/some-study", book_url="https://x.example.org/study/")
    publish.write_book_config(ROOT / "_config.yml", overlay, published)
    for config, link in ((ROOT / "_config.yml", None), (published, "https://x.example.org/study/CITATION.cff")):
        sphinx, _ = get_final_config(user_yaml=config, sourcedir=ROOT, cli_config={"latex_individualpages": False})
        footer = sphinx["html_theme_options"]["extra_footer"]
        assert publish.CITATION_FILE in footer and (link is None or f'href="{link}"' in footer)
        assert publish.CITATION_FILE in sphinx["html_extra_path"]
