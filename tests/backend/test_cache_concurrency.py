"""Concurrent compiles of one kernel run tileiras once, from threads and from processes;
a killed compile leaves no tileiras running and no temporary files past the next start."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import cache_workers
import pytest

import cutile
from cutile.backend import stale
from cutile.backend.cache import MEMORY, CompiledCubin, compile_cubin

PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch, fake_tileiras: Path, tmp_path: Path) -> Iterator[Path]:
    """The log the fake tileiras appends one line to per assembly."""
    log = tmp_path / "tileiras-runs.log"
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("FAKE_TILEIRAS_LOG", str(log))
    monkeypatch.setenv("FAKE_TILEIRAS_SLEEP", "0.5")  # long enough for everyone to pile up
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    MEMORY.clear()
    yield log
    MEMORY.clear()


def run_count(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("disk_cache", [True, False])
def test_threads_compiling_one_kernel_run_tileiras_once(
    runs: Path, monkeypatch: pytest.MonkeyPatch, disk_cache: bool,
) -> None:
    if not disk_cache:
        monkeypatch.setenv("CUTILE_CACHE_DIR", "off")
    barrier = threading.Barrier(8)
    results: list[CompiledCubin] = []

    def work() -> None:
        barrier.wait()
        results.append(compile_cubin(cache_workers.BYTECODE, "sm_90"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert run_count(runs) == 1
    assert len({r.cubin for r in results}) == 1 and len(results) == 8
    assert sorted(r.from_cache for r in results).count("") == 1


def test_processes_compiling_one_kernel_run_tileiras_once(runs: Path) -> None:
    ctx = multiprocessing.get_context("spawn")  # no fork of a threaded test process
    n = 4
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=cache_workers.compile_once, args=(barrier, results))
             for _ in range(n)]
    for p in procs:
        p.start()
    cubins = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert run_count(runs) == 1
    assert len(set(cubins)) == 1 and cubins[0].startswith(b"FAKECUBIN sm_90")


# The child takes Ctrl-C as an interactive Python does, whatever it inherited: a test run
# started in the background (`cmd &` in a script) ignores SIGINT, and so would the child.
COMPILE = textwrap.dedent('''
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from cutile.backend.cache import compile_cubin
    compile_cubin(b"\\x7fTileIR\\x00\\x0d\\x03\\x00\\x00killed", "sm_90")
''')


def alive(pid: int) -> bool:
    return stale.pid_alive(pid)


def start_hanging_compile(tmp_path: Path, fake_tileiras: Path) -> tuple[subprocess.Popen[str],
                                                                          int, Path]:
    """A child process stuck in a tileiras run: (the process, tileiras' pid, its TMPDIR)."""
    pidfile, tmpdir = tmp_path / "tileiras.pid", tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, CUTILE_TILEIRAS=str(fake_tileiras),
               CUTILE_CACHE_DIR=str(tmp_path / "cache"), FAKE_TILEIRAS_PID=str(pidfile),
               FAKE_TILEIRAS_HANG="300", TMPDIR=str(tmpdir))
    proc = subprocess.Popen([sys.executable, "-c", COMPILE], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "tileiras never started"
        time.sleep(0.05)
    return proc, int(pidfile.read_text()), tmpdir


def wait_dead(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_killed_compile_leaves_no_tileiras_running(tmp_path: Path,
                                                     fake_tileiras: Path) -> None:
    proc, tileiras, tmpdir = start_hanging_compile(tmp_path, fake_tileiras)
    try:
        proc.kill()  # SIGKILL: no Python code runs in the dying process
        proc.communicate(timeout=30)
        assert wait_dead(tileiras), "tileiras outlived the process that started it"
    finally:
        if alive(tileiras):
            os.kill(tileiras, signal.SIGKILL)
    # Its run directory is still there (no code ran to remove it) ...
    left = [p.name for p in tmpdir.iterdir()]
    assert left and all(n.startswith(f"cutile-tileiras-{proc.pid}-") for n in left)


def test_the_next_start_removes_what_a_killed_compile_left(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir, cache = tmp_path / "tmp", tmp_path / "cache"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    old = time.time() - 2 * stale.MIN_AGE_S
    leftovers = [tmpdir / f"cutile-tileiras-{dead_pid}-x1", tmpdir / f"cutile-disasm-{dead_pid}-x2",
                 cache / "ab" / f".{'ab' * 8}.{dead_pid}.q1.tmp"]
    live = [tmpdir / f"cutile-tileiras-{os.getpid()}-x3",  # ours: still running
            tmpdir / f"cutile-tileiras-{dead_pid}-young",  # too young to judge by its pid
            tmpdir / "someone-elses-file"]
    for p in leftovers + live:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.mkdir() if "tileiras" in p.name or "disasm" in p.name else p.write_bytes(b"x")
        if p.name != f"cutile-tileiras-{dead_pid}-young":
            os.utime(p, (old, old))
    assert stale.clean_temp_dirs(tmpdir) == 2
    assert stale.clean_cache_temps(cache) == 1
    assert not any(p.exists() for p in leftovers)
    assert all(p.exists() for p in live)


def test_a_new_process_cleans_up_at_its_first_compile(tmp_path: Path,
                                                      fake_tileiras: Path) -> None:
    proc, tileiras, tmpdir = start_hanging_compile(tmp_path, fake_tileiras)
    try:
        proc.kill()
        proc.communicate(timeout=30)
        assert wait_dead(tileiras)
    finally:
        if alive(tileiras):
            os.kill(tileiras, signal.SIGKILL)
    (left,) = tmpdir.iterdir()
    old = time.time() - 2 * stale.MIN_AGE_S
    os.utime(left, (old, old))  # as if the next start came a while later
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, CUTILE_TILEIRAS=str(fake_tileiras),
               CUTILE_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmpdir))
    env.pop("FAKE_TILEIRAS_HANG", None)
    subprocess.run([sys.executable, "-c", COMPILE.replace("killed", "next")], env=env,
                   check=True, timeout=120)
    assert list(tmpdir.iterdir()) == []


def test_ctrl_c_during_a_compile_stops_tileiras_and_cleans_up(tmp_path: Path,
                                                              fake_tileiras: Path) -> None:
    proc, tileiras, tmpdir = start_hanging_compile(tmp_path, fake_tileiras)
    try:
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - start < 20  # not the 300 s the tool would hang
        assert "KeyboardInterrupt" in err
        assert wait_dead(tileiras)
    finally:
        if alive(tileiras):
            os.kill(tileiras, signal.SIGKILL)
    assert list(tmpdir.iterdir()) == []  # the run directory went with the exception
