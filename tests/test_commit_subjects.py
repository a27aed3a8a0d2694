"""``.ci/commit-subjects``: CI fails on a commit subject over 72 characters, from the commit that
added the check on; merge commits and older commits are not read."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = "x" * 73


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _commit(repo: Path, subject: str, name: str) -> None:
    (repo / name).write_text(subject)
    _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", subject)


def _check(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(repo / ".ci" / "commit-subjects")], capture_output=True, text=True)


def test_a_long_subject_after_the_check_fails_and_is_named(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "study@example.org")
    _git(repo, "config", "user.name", "study")
    _commit(repo, "an older commit with a subject far longer than seventy-two characters, before the check", "a")
    (repo / ".ci").mkdir()
    shutil.copy2(ROOT / ".ci" / "commit-subjects", repo / ".ci" / "commit-subjects")
    _git(repo, "add", ".ci")
    _git(repo, "commit", "-q", "-m", "CI checks commit subjects")
    done = _check(repo)
    assert done.returncode == 0, done.stdout
    assert "1 checked" in done.stdout
    _git(repo, "checkout", "-q", "-b", "side")
    _commit(repo, "a side commit", "b")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, "é" * 72, "c")  # 72 characters, more bytes: within the limit
    _git(repo, "merge", "-q", "--no-ff", "side", "-m", LONG)  # a merge commit: not read
    done = _check(repo)
    assert done.returncode == 0, done.stdout
    _commit(repo, LONG, "d")
    done = _check(repo)
    assert done.returncode == 1
    assert f"subject of 73 characters (at most 72): {LONG}" in done.stdout
