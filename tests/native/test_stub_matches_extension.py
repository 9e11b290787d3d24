"""`python/cutile/_native.pyi` is the contract between the Python package and the Rust
extension: `mypy.stubtest` compares it with what the built `cutile._native` exports (names,
signatures, which classes can be subclassed), so a change on either side that the other
does not follow fails here rather than in a user's type checker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cutile


def test_the_stub_matches_the_extension(tmp_path: Path) -> None:
    root = str(Path(cutile.__file__).resolve().parents[1])
    env = dict(os.environ, MYPYPATH=root, PYTHONPATH=root)
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--concise", "cutile._native"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
