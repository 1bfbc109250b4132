"""Every golden file through the Python API on the CPU (numpy arrays)."""
import os

import pytest

import golden

FILES = golden.golden_files()


@pytest.mark.skipif(not FILES, reason="no golden files (tests/golden or DSV4KV_GOLDEN)")
@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_golden_cpu(path):
    golden.run(path)
