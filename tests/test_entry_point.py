"""The installed ``layer-gradient`` command is ``python -m analysis``, exit status included."""

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from analysis import cli


def test_console_script_is_the_command_line_main():
    [script] = [e for e in entry_points(group="console_scripts") if e.name == "layer-gradient"]
    assert script.value == "analysis.cli:main"
    assert script.load() is cli.main


def test_console_script_exits_with_mains_status(tmp_path):
    command = Path(sys.executable).with_name("layer-gradient")
    if not command.is_file():
        pytest.skip(f"{command} not installed (pip install -e .)")
    listed = subprocess.run(
        [command, "data", "list", "--data-dir", str(tmp_path)], check=False, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0 and "aqua/detailed/correct" in listed.stdout
    refused = subprocess.run(
        [command, "extract", "--model", "m", "--data", "no-such-condition", "--out", str(tmp_path / "out")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "unknown condition" in refused.stderr
