"""Make `cutile` importable from the source tree when the package is not installed."""

import sys
from pathlib import Path

_PYTHON = Path(__file__).resolve().parents[2] / "python"
if str(_PYTHON) not in sys.path:
    sys.path.insert(0, str(_PYTHON))
