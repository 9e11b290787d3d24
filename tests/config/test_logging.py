"""Logging through the standard `logging` module (logger `cutile` and children), the
`CUTILE_LOG` switch, and the stderr notice for slow compiles."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import cutile
from cutile import log
from cutile.backend.cache import MEMORY
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])


def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


def writes_input(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    x.store(load_tile_like(x, z))


@pytest.fixture
def fresh_memory_cache() -> Iterator[None]:
    MEMORY.clear()
    yield
    MEMORY.clear()


def test_a_check_is_logged_with_its_verdict(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cutile")
    cutile.entry(copy).check()
    with pytest.raises(cutile.KernelCheckError):
        cutile.entry(writes_input).check()
    checks = [r for r in caplog.records if r.name == "cutile.check"]
    assert len(checks) == 2
    assert "`copy`" in checks[0].getMessage() and "accepted" in checks[0].getMessage()
    assert "static" in checks[0].getMessage()  # how the obligations were discharged
    assert "rejected (CT1001)" in checks[1].getMessage()


def test_nothing_is_logged_below_the_configured_level(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="cutile")
    cutile.entry(copy).check()
    assert [r for r in caplog.records if r.name.startswith("cutile")] == []


def test_cache_misses_hits_compile_times_and_the_command_line_are_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, fake_tileiras: Path,
    tmp_path: Path, fresh_memory_cache: None,
) -> None:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    caplog.set_level(logging.DEBUG, logger="cutile")
    kernel = cutile.entry(copy)
    kernel.compile(B=128)
    text = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records)
    assert "cutile.cache: cache miss" in text
    assert f"cutile.tileiras: $ {fake_tileiras} --gpu-name sm_90 -O3" in text
    assert "cutile.compile: compiled `copy` for sm_90 in" in text
    caplog.clear()
    kernel.compile(B=128)
    MEMORY.clear()
    kernel.compile(B=128)
    hits = [r.getMessage() for r in caplog.records if r.name == "cutile.cache"]
    assert hits[0].startswith("cache hit (memory)") and hits[1].startswith("cache hit (disk)")


def test_a_slow_compile_prints_one_notice(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fake_tileiras: Path,
    tmp_path: Path, fresh_memory_cache: None,
) -> None:
    # A real 2.2 s tileiras run, not a patched threshold: the notice is for the user
    # staring at a first launch that stalls.
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("FAKE_TILEIRAS_SLEEP", "2.2")
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_QUIET")
    kernel = cutile.entry(copy)
    kernel.compile(B=64)
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("cutile: compiling `copy` for sm_90 took 2.")
    assert str(tmp_path / "cache") in lines[0]
    monkeypatch.setenv("CUTILE_QUIET", "1")
    kernel.compile(B=32)
    assert capfd.readouterr().err == ""


def test_a_fast_compile_prints_nothing(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fake_tileiras: Path,
    tmp_path: Path, fresh_memory_cache: None,
) -> None:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_QUIET")
    cutile.entry(copy).compile(B=16)
    assert capfd.readouterr().err == ""


SCRIPT = textwrap.dedent('''
    import cutile
    from cutile.core import Const, Mut, Tensor, f32, load_tile_like

    @cutile.entry
    def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(load_tile_like(x, z))

    copy.check()
''')


def run_script(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    full = {k: v for k, v in os.environ.items() if k != "CUTILE_LOG"}
    full.update(env, PYTHONPATH=PACKAGE_ROOT)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=full, timeout=120)


def test_cutile_log_makes_a_plain_script_log_to_stderr(tmp_path: Path) -> None:
    quiet = run_script(tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = run_script(tmp_path, CUTILE_LOG="info")
    assert loud.returncode == 0, loud.stderr
    assert "cutile.check: INFO: checked `copy`" in loud.stderr


def test_an_unknown_log_level_warns_and_does_not_stop_the_program(tmp_path: Path) -> None:
    r = run_script(tmp_path, CUTILE_LOG="verbose")
    assert r.returncode == 0, r.stderr
    assert "CT8004" in r.stderr and "`debug`" in r.stderr
    assert "checked" not in r.stderr


def test_the_cutile_logger_has_a_null_handler_and_propagates() -> None:
    logger = logging.getLogger(log.ROOT)
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    assert logger.propagate
