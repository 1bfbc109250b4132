"""The Python examples run as a user runs them, so that they cannot rot."""
import os
import pathlib
import subprocess
import sys

import pytest

import dsv4kv

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["paged_cache.py"])
def test_example_runs_and_checks_itself(name):
    pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ)
    pkg_parent = str(pathlib.Path(dsv4kv.__file__).resolve().parents[1])  # the package this suite imported
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("OK"), run.stdout
    assert "1 skipped" in run.stdout
