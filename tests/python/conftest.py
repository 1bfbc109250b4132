"""pytest setup: the package from python/ of this checkout unless one is
installed (pip install .), so the suite runs either way."""
import pathlib
import sys

_here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_here))
try:
    import dsv4kv  # noqa: F401  (an installed package)
except ImportError:
    sys.path.insert(0, str(_here.parents[1] / "python"))
