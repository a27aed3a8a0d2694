"""The published book: the configuration the workflow fills, the notebooks it publishes, and the
workflow itself (its make targets and commands exist; actionlint finds nothing)."""

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

from analysis import cli
from analysis.core.errors import StudyError
from analysis.study import publish

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _run_lines() -> list[str]:
    """Every shell line of the workflow's steps (folded ``>-`` blocks joined into one line)."""
    lines = []
    for job in _workflow()["jobs"].values():
        for step in job.get("steps", []):
            lines += [line.strip() for line in step.get("run", "").splitlines() if line.strip()]
    return lines


def test_book_config_fills_the_repository_and_launch_buttons(tmp_path):
    out = tmp_path / "_config.yml"
    code = cli.main(
        [
            "book-config",
            "--repository",
            "someone/some-study",
            "--server-url",
            "https://git.example.org",
            "--path-to-book",
            "original",
            "--book-url",
            "https://someone.example.org/some-study/original/",
            "--other-book",
            "https://someone.example.org/some-study/",
            "--other-title",
            "the book's first",
            "--other-book",
            "https://someone.example.org/some-study/training/",
            "--config",
            str(ROOT / "_config.yml"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    config = yaml.safe_load(out.read_text())
    project = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"] == {
        "url": "https://git.example.org/someone/some-study",
        "path_to_book": "original",
        "branch": publish.NOTEBOOKS_BRANCH,
    }
    assert config["html"]["use_repository_button"] is True
    assert config["launch_buttons"]["binderhub_url"] == publish.BINDER_URL
    assert config["launch_buttons"]["colab_url"] == publish.COLAB_URL
    assert config["html"]["announcement"] == (
        'Also published: <a href="https://someone.example.org/some-study/">the book\'s first</a> and '
        f'<a href="https://someone.example.org/some-study/training/">{publish.OTHER_BOOK_TITLE}</a>.'
    )
    footer = config["html"]["extra_footer"]
    assert 'href="https://someone.example.org/some-study/original/CITATION.cff"' in footer
    # the rest of the project's configuration is kept
    assert config["title"] == project["title"] and config["sphinx"] == project["sphinx"]
    assert config["html"]["home_page_in_navbar"] == project["html"]["home_page_in_navbar"]


def test_other_books_pair_each_title_with_its_address_in_order():
    assert publish.other_books(["a/", "b/", "c/"], ["A", "B"]) == [
        ("a/", "A"),
        ("b/", "B"),
        ("c/", publish.OTHER_BOOK_TITLE),
    ]
    assert publish.announcement([("a/", "A")]) == 'Also published: <a href="a/">A</a>.'
    assert publish.announcement([("a/", "A"), ("b/", "B"), ("c/", "C <1>")]) == (
        'Also published: <a href="a/">A</a>, <a href="b/">B</a> and <a href="c/">C &lt;1&gt;</a>.'
    )
    with pytest.raises(StudyError, match="2 titles for 1 other books"):
        publish.other_books(["a/"], ["A", "B"])
    alone = publish.book_config("someone/some-study")["html"]  # no other book, no address of its own
    assert "announcement" not in alone and "extra_footer" not in alone


def test_the_project_writes_no_repository_address():
    project = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "repository" not in project and "binderhub_url" not in project.get("launch_buttons", {})
    assert "github.com/" not in WORKFLOW.read_text()  # the address comes from the workflow's context
    assert "${{ github.repository }}" in WORKFLOW.read_text()


@pytest.mark.parametrize("name", ["owner", "owner/", "/name", "a/b/c", "own er/name"])
def test_a_repository_name_that_is_not_owner_slash_name_is_refused(name):
    with pytest.raises(StudyError, match="OWNER/NAME"):
        publish.book_config(name)


def _executed_notebook(path: Path, results_dir: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell('profile = "cpu"\nresults_dir = None', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            f'profile = "cpu"\nresults_dir = "{results_dir}"', metadata={"tags": ["injected-parameters"]}
        ),
        nbformat.v4.new_code_cell("print(results_dir)"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def test_published_notebooks_read_the_store_beside_them(tmp_path):
    built = tmp_path / "built"
    _executed_notebook(built / "book" / "notebooks" / "intro.ipynb", "/home/builder/results/cpu")
    store = built / "book" / "_extra" / "results.parquet"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"PAR1")
    first = publish.colab_cell_source(
        "someone/some-study", "https://github.com", "book-notebooks", "https://x/r.parquet"
    )
    written = publish.publish_notebooks(built, tmp_path / "site", "cpu", store, first_cell=first)
    assert [p.name for p in written] == ["intro.ipynb"]
    assert (tmp_path / "site" / "book" / "notebooks" / "results.parquet").read_bytes() == b"PAR1"
    notebook = nbformat.read(written[0], as_version=4)
    assert notebook.cells[0].source == first and "remove-cell" in notebook.cells[0].metadata["tags"]
    injected = next(c for c in notebook.cells if "injected-parameters" in c.metadata["tags"])
    namespace: dict = {}
    exec(injected.source, namespace)
    assert namespace["results_dir"] == publish.STORE_NAME and namespace["profile"] == "cpu"
    assert "/home/builder" not in nbformat.writes(notebook)
    compile(first, "first cell", "exec")  # valid Python
    # a store over the limit is left out (GitHub refuses files over 100 MB)
    publish.publish_notebooks(built, tmp_path / "large", "cpu", store, limit=3)
    assert not (tmp_path / "large" / "book" / "notebooks" / "results.parquet").exists()


def test_a_notebook_not_executed_by_the_study_is_refused(tmp_path):
    path = tmp_path / "book" / "notebooks" / "intro.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), path)
    with pytest.raises(StudyError, match="injected-parameters"):
        publish.publish_notebook(path, tmp_path / "out.ipynb", "cpu")


def _book_jobs() -> dict[str, dict]:
    """Each job that builds a book: its profile, its book-config options and its HTML artifact."""
    books = {}
    for name, job in _workflow()["jobs"].items():
        steps = job.get("steps", [])
        runs = [shlex.split(step["run"]) for step in steps if "run" in step]
        built = [words for words in runs if words[:2] == ["make", "book"]]
        if not built:
            continue
        profile = next((w.split("=", 1)[1] for w in built[0] if w.startswith("PROFILE=")), "cpu")
        config = next(words for words in runs if "book-config" in words)
        uploads = [s["with"]["name"] for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
        books[name] = {"profile": profile, "config": config, "html": next(n for n in uploads if n.endswith("-html"))}
    return books


def _options(words: list[str], flag: str) -> list[str]:
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == flag]


def _site_folders() -> dict[str, str]:
    """Where the deploy job puts each book's HTML artifact: artifact name -> folder under the site."""
    steps = _workflow()["jobs"]["deploy"]["steps"]
    downloads = [s["with"] for s in steps if s.get("uses", "").startswith("actions/download-artifact")]
    return {d["name"]: d["path"].removeprefix("site").strip("/") for d in downloads if "name" in d}


def test_the_workflow_publishes_the_cpu_original_training_and_decide_books_each_in_its_folder():
    books = _book_jobs()
    assert sorted(b["profile"] for b in books.values()) == ["cpu", "decide", "original", "training"]
    folders = _site_folders()
    deploy = _workflow()["jobs"]["deploy"]
    assert set(books) <= set(deploy["needs"])
    published = next(s["run"] for s in deploy["steps"] if "git add -f" in s.get("run", ""))
    for book in books.values():
        folder = folders[book["html"]]
        assert folder == ("" if book["profile"] == "cpu" else book["profile"])
        assert _options(book["config"], "--path-to-book") == ([folder] if folder else [])
        assert _options(book["config"], "--book-url") == [f"$BASE_URL/{folder}/" if folder else "$BASE_URL/"]
        assert f"{folder}/book/notebooks".lstrip("/") in published.split()


def test_every_published_book_links_the_others():
    books = _book_jobs()
    addresses = {name: _options(book["config"], "--book-url")[0] for name, book in books.items()}
    for name, book in books.items():
        others = _options(book["config"], "--other-book")
        assert sorted(others) == sorted(a for n, a in addresses.items() if n != name), name
        assert len(_options(book["config"], "--other-title")) == len(others), name


@pytest.mark.parametrize(
    ("job_name", "store", "top"),
    [("training-book", "results/training", "train"), ("decide-book", "results/decide", "extract")],
)
def test_a_cached_store_is_keyed_by_the_hash_of_the_stages_that_make_it(job_name, store, top):
    job = _workflow()["jobs"][job_name]
    hashed = next(s["run"] for s in job["steps"] if s.get("id") == "code")
    patterns = set(re.findall(r"'([^']+)'", hashed))
    listed = re.search(r"^layers = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.MULTILINE | re.DOTALL)
    layers = re.findall(r'"([^"]+)"', listed.group(1))  # import-linter's stages, top first
    below = [m.strip() for layer in layers[layers.index(top) :] for m in layer.split(":")]
    for module in below:
        assert {f"analysis/{module}/**", f"analysis/{module}.py"} & patterns, module
    assert {"analysis/data/**", "pyproject.toml", "Makefile"} <= patterns  # data/ holds SHA256SUMS
    caches = [s["with"] for s in job["steps"] if s.get("uses", "").startswith("actions/cache/")]
    assert {c["path"] for c in caches} == {store}
    assert all("steps.code.outputs.hash" in c["key"] for c in caches)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.MULTILINE))


def test_the_workflow_calls_only_make_targets_that_exist_and_each_runs_dry():
    calls = [line.split("make", 1)[1].split() for line in _run_lines() if re.match(r"^make\s", line)]
    assert calls, "the workflow builds the books with make"
    targets = _make_targets()
    for words in calls:
        named = [w for w in words if "=" not in w]
        assert set(named) <= targets, words
        done = subprocess.run(["make", "-n", *words], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, (words, done.stderr)
        if "book" in named:
            profile = next((w.split("=", 1)[1] for w in words if w.startswith("PROFILE=")), "cpu")
            assert f"-m analysis run --profile {profile}" in done.stdout


def test_the_workflow_calls_only_commands_the_project_has():
    commands = set(cli.build_parser()._subparsers._group_actions[0].choices)
    called = {m.group(1) for line in _run_lines() for m in [re.search(r"-m analysis ([\w-]+)", line)] if m}
    assert {"book-config", "publish-notebooks", "import-original"} <= called <= commands


def test_binder_pins_the_torch_of_the_makefile():
    pinned = re.search(r"^TORCH_VERSION \?= (\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    assert f"torch=={pinned}" in (ROOT / "binder" / "requirements.txt").read_text().split()
    assert f'"torch=={pinned}"' in (ROOT / "binder" / "postBuild").read_text()


def _tool(name: str) -> str:
    """The path of a linter the test extras install, or a skip saying how to install it."""
    found = shutil.which(name, path=str(ROOT / ".venv" / "bin")) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]')")
    return found


def test_actionlint_finds_nothing_in_the_workflow_with_its_run_steps_through_shellcheck():
    done = subprocess.run(
        [_tool("actionlint"), "-shellcheck", _tool("shellcheck"), str(WORKFLOW)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _is_shell_script(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as f:
        first = f.readline(200)
    return first.startswith(b"#!") and first.rstrip().endswith((b"sh", b"bash"))


def test_shellcheck_finds_nothing_in_the_shell_scripts_make_lint_names():
    scripts = re.search(r"^SHELL_SCRIPTS := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1).split()
    shell = {str(p.relative_to(ROOT)) for p in ROOT.glob("[!.]*/*") if _is_shell_script(p)}
    shell |= {str(p.relative_to(ROOT)) for p in ROOT.glob(".ci/*") if _is_shell_script(p)}
    assert shell <= set(scripts), f"shell scripts that make lint does not check: {sorted(shell - set(scripts))}"
    done = subprocess.run([_tool("shellcheck"), *scripts], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
