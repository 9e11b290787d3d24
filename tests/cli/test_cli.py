"""`python -m cutile check|compile|info`: a linter for CI and tools for users."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cutile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = textwrap.dedent('''
    import cutile
    from cutile.core import Const, Mut, Tensor, f32, load_tile_like

    @cutile.entry
    def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(load_tile_like(x, z))
''')

BAD = textwrap.dedent('''
    import cutile
    from cutile.core import Const, Mut, Tensor, f32, load_tile_like

    @cutile.entry
    def writes_input(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        x.store(load_tile_like(x, z))

    @cutile.entry
    def uses_moved(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        w = z
        z.store(load_tile_like(x, w))
''')


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # The cutile under test, wherever it is imported from (a checkout, an install).
    env = dict(os.environ, PYTHONPATH=str(Path(cutile.__file__).resolve().parents[1]))
    return subprocess.run([sys.executable, "-m", "cutile", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_check_passes_clean_files(tmp_path: Path) -> None:
    f = tmp_path / "good.py"
    f.write_text(GOOD)
    r = run("check", str(f), *[str(p) for p in sorted(EXAMPLES.glob("*.py"))])
    assert r.returncode == 0, r.stderr
    assert "0 failed" not in r.stdout and "ok" in r.stdout


def test_check_reports_every_violation_and_fails(tmp_path: Path) -> None:
    f = tmp_path / "bad.py"
    f.write_text(BAD)
    r = run("check", str(f))
    assert r.returncode == 1
    assert "CT1001" in r.stderr and "CT1002" in r.stderr
    assert "bad.py:7" in r.stderr and "bad.py:12" in r.stderr
    assert "2 failed" in r.stdout


def test_check_reports_unimportable_files(tmp_path: Path) -> None:
    f = tmp_path / "broken.py"
    f.write_text("this is not python(\n")
    r = run("check", str(f))
    assert r.returncode == 1
    assert "cannot import" in r.stderr


@pytest.mark.tileiras
def test_compile_writes_a_cubin(tmp_path: Path) -> None:
    out = tmp_path / "add.cubin"
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "add", "-D", "B=256", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"


def test_info_always_answers() -> None:
    r = run("info")
    assert r.returncode == 0
    assert "tileiras" in r.stdout and "driver" in r.stdout


def test_the_papers_race_is_rejected_with_a_colliding_pair() -> None:
    r = run("check", str(EXAMPLES / "race" / "permute_heads_racy.py"))
    assert r.returncode == 1
    assert "error[CT2001]" in r.stderr
    assert "both store to tile" in r.stderr and "permute_heads_racy.py:24" in r.stderr


def test_explain_knows_every_code_a_test_or_the_source_raises() -> None:
    import re

    from cutile.error_codes import all_codes

    root = Path(__file__).resolve().parents[2]
    raised = set()
    for f in (root / "python" / "cutile").rglob("*.py"):
        raised |= set(re.findall(r'code="(CT\d{4})"', f.read_text()))
    known = all_codes()
    base = {"CT1000", "CT5000", "CT6000", "CT7000", "CT9000"}  # exception-class defaults
    assert raised - set(known) - base == set()
    r = run("explain", "CT2001")
    assert r.returncode == 0 and "CT2001" in r.stdout
    assert run("explain", "CT9999").returncode == 2
