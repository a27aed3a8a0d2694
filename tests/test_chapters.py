"""The one chapter list: _toc.yml. A new chapter is one notebook plus one line there."""

import shutil
from pathlib import Path

import pytest
from sphinx_external_toc.parsing import parse_toc_yaml

from analysis import profiles
from analysis.core import chapters
from analysis.report import notebook_parameters
from analysis.study import book

# Notebooks that take other parameters than a profile's and run by their own command
# (``python -m analysis profile-data``), never as part of a profile's book.
STANDALONE = tuple(c.name for c in profiles.CHAPTERS if c.standalone is not None)

PROJECT = Path(__file__).resolve().parents[1]
TRAINING = """# %% [markdown]
# # Training

# %% tags=["parameters", "remove-cell"]
profile = "cpu"
results_dir = None
data_dir = None
models = None
conditions = None
steps = 10  # this chapter's own parameter
"""


def project_with_a_new_chapter(root: Path) -> Path:
    shutil.copytree(PROJECT / "notebooks", root / "notebooks")
    (root / "notebooks" / "training.py").write_text(TRAINING)
    toc = (PROJECT / "_toc.yml").read_text()
    line = "      - file: book/notebooks/reproducibility\n"
    assert line in toc
    (root / "_toc.yml").write_text(toc.replace(line, line + "      - file: book/notebooks/training\n"))
    return root


def test_the_chapters_are_the_toc_s(tmp_path):
    assert profiles.NOTEBOOKS[0] == "intro" and "your_data" not in profiles.NOTEBOOKS
    assert profiles.FAMILY_NOTEBOOKS == (
        "math_reasoning",
        "commonsense_reasoning",
        "wiki_knowledge",
        "pretrained_vs_instruct",
    )
    assert STANDALONE == ("your_data",) and "profile-data" in book.optional_chapters()["your_data"]
    assert notebook_parameters.page_parameters("reproducibility") == ("benchmarks_file", "export_file", "deciding_dir")
    assert notebook_parameters.page_parameters("original_comparison") == ("compare_dirs",)
    assert notebook_parameters.page_parameters("summary") == ()
    parse_toc_yaml(str(PROJECT / "_toc.yml"))  # what jupyter-book 1.x reads it with: the meta keys pass


def test_a_new_chapter_is_one_notebook_and_one_toc_line(tmp_path):
    root = project_with_a_new_chapter(tmp_path)
    assert profiles.pages(root) == (*profiles.NOTEBOOKS, "training")
    own = profiles.pages(source="training")  # the training profiles' chapter, after the new one
    assert book.toc_chapters(root) == [*profiles.NOTEBOOKS, "training", *own, *STANDALONE]
    assert [p.stem for p in book.notebook_sources(root)] == [*profiles.NOTEBOOKS, "training"]
    assert notebook_parameters.page_parameters("training", root) == ("steps",)
    assert "training" not in book.optional_chapters(root)
    parse_toc_yaml(str(root / "_toc.yml"))


def test_a_wrong_meta_value_is_one_line(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/notebooks/intro\nparts:\n  - caption: R\n    chapters:\n"
        "      - file: book/notebooks/x\n        meta: {conditions: some}\n"
    )
    with pytest.raises(chapters.ChapterError, match="meta conditions must be 'family'"):
        chapters.chapters(tmp_path)


def test_a_chapter_kept_to_a_profile_source_is_only_that_source_s_book():
    """The training chapter: executed by the training profiles alone, left out of the others' books
    until a training profile has made it."""
    assert "during_training" not in profiles.NOTEBOOKS and profiles.pages(source="training") == ("during_training",)
    assert profiles.get_profile("training").notebooks() == ("during_training",)
    assert profiles.get_profile("cpu").notebooks() is None and profiles.get_profile("quick").notebooks() is None
    assert "during_training" not in [p.stem for p in book.notebook_sources(PROJECT)]
    assert book.optional_chapters()["during_training"] == "make book PROFILE=training writes it"


def test_a_wrong_meta_source_is_one_line(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/notebooks/intro\nparts:\n  - caption: R\n    chapters:\n"
        "      - file: book/notebooks/x\n        meta: {source: 3}\n"
    )
    with pytest.raises(chapters.ChapterError, match="meta source must name a profile source"):
        chapters.chapters(tmp_path)


def test_an_installed_package_without_the_project_checkout_has_no_chapters_but_imports(tmp_path, monkeypatch):
    """``pip install .`` (a Ray worker node) has no _toc.yml beside the package: the profiles still
    load (extraction and import need no book), with no pages to execute."""
    monkeypatch.setattr(chapters, "PROJECT_ROOT", tmp_path)
    assert chapters.project_chapters() == ()
    with pytest.raises(chapters.ChapterError, match="cannot read the book's table of contents"):
        chapters.chapters(tmp_path)
