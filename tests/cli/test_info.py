"""`python -m cutile info`: plain text a user can read and paste into a bug report, with
every environment variable cutile reads and its value."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import cutile
from cutile import environment

PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])


def info(**env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in environment.NAMES}
    full.update(env, PYTHONPATH=PACKAGE_ROOT)
    return subprocess.run([sys.executable, "-m", "cutile", "info"], capture_output=True,
                          text=True, timeout=120, env=full)


def assert_readable(text: str) -> None:
    # Python reprs: PosixPath('...'), Tileiras(path=...), <CUresult...: 100>, {'a': 1}
    assert not re.search(r"\w+\(\w+=|PosixPath|<[A-Za-z_.]+[:>]|\{'", text), text


def test_info_lists_every_variable_with_its_value(fake_tileiras: Path, tmp_path: Path) -> None:
    r = info(CUTILE_TILEIRAS=str(fake_tileiras), CUTILE_CACHE_DIR=str(tmp_path),
             CUTILE_CACHE_MAX="500M", CUTILE_BACKEND="interpreter", CUTILE_LOG="warning",
             CUTILE_AUTOTUNE="0")
    assert r.returncode == 0, r.stderr
    assert_readable(r.stdout)
    for var in environment.VARIABLES:
        assert re.search(rf"^  {var.name} +(= |unset)", r.stdout, re.MULTILINE), var.name
    assert re.search(rf"^  CUTILE_TILEIRAS +=\s+{re.escape(str(fake_tileiras))}$", r.stdout,
                     re.MULTILINE)
    assert re.search(r"^  CUTILE_CACHE_MAX +=\s+500M$", r.stdout, re.MULTILINE)
    assert re.search(r"^  CUTILE_AUTOTUNE +=\s+0$", r.stdout, re.MULTILINE)
    assert f"tileiras: {fake_tileiras} (from $CUTILE_TILEIRAS)" in r.stdout
    assert "tileiras version: Cuda compilation tools, release 13.4, V13.4.1" in r.stdout
    assert "backend: CPU interpreter" in r.stdout
    assert f"cutile {cutile.__version__}" in r.stdout
    assert_nvrtc_line(r.stdout)


def assert_nvrtc_line(text: str) -> None:
    """NVRTC's version where it loads, else why not (CT7010)."""
    from cutile.backend import nvrtc
    from cutile.errors import CompileError

    try:
        want = (f"nvrtc: {nvrtc.nvrtc_version()} (raw CUDA C++ kernels), nvjitlink: "
                f"{nvrtc.nvjitlink_version()}")
    except CompileError as err:
        want = f"nvrtc: error[CT7010]: {err.message}"
    assert want in text.splitlines(), text


def test_info_reports_bad_settings_in_their_line_and_still_answers(tmp_path: Path) -> None:
    r = info(CUTILE_BACKEND="gpus", CUTILE_TILEIRAS=str(tmp_path / "nothing"))
    assert r.returncode == 0, r.stderr
    assert_readable(r.stdout)
    assert "backend: error[CT8001]" in r.stdout
    assert "tileiras: error[CT7002]" in r.stdout
    assert "environment:" in r.stdout
