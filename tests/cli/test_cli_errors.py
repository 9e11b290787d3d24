"""The command line's failures: a typed error with a code and a hint and exit 2 for usage
mistakes, never a traceback; a closed pipe ends quietly; a bug in cutile is one line, the
version, and where to report it (exit 3). Every test runs the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cutile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    env.update(extra)
    return env


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cutile", *args], capture_output=True,
                          text=True, timeout=300, env=cli_env(**env))


def assert_usage_error(r: subprocess.CompletedProcess[str], code: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith(f"error[{code}]: "), r.stderr
    assert "\n  help: " in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("cmd", [["compile", "missing.py", "-k", "add"],
                                 ["check", str(EXAMPLES / "add.py"), "missing.py"]])
def test_a_missing_file_is_a_usage_error(cmd: list[str]) -> None:
    r = run(*cmd)
    assert_usage_error(r, "CT8010")
    assert "missing.py" in r.stderr


@pytest.mark.parametrize(("define", "code", "says"), [
    ("B=abc", "CT8012", "`abc` is not an integer"),
    ("B", "CT8012", "expected NAME=VALUE"),
    ("=128", "CT8012", "expected NAME=VALUE"),
    ("C=1", "CT8013", "no Const parameter `C`"),
])
def test_a_bad_define_is_a_usage_error(define: str, code: str, says: str) -> None:
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "add", "-D", define)
    assert_usage_error(r, code)
    assert says in r.stderr


def test_a_missing_define_names_the_const() -> None:
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "add")
    assert_usage_error(r, "CT8013")
    assert "-D B=..." in r.stderr


def test_an_unknown_kernel_lists_the_ones_there() -> None:
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "ad", "-D", "B=128")
    assert_usage_error(r, "CT8015")
    assert "`add`" in r.stderr


@pytest.mark.parametrize("where", ["no-such-dir/add.cubin", "."])
def test_an_unwritable_output_is_a_usage_error(tmp_path: Path, fake_tileiras: Path,
                                               where: str) -> None:
    out = tmp_path / where
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "add", "-D", "B=128", "-o", str(out),
            CUTILE_TILEIRAS=str(fake_tileiras), CUTILE_CACHE_DIR="off")
    assert_usage_error(r, "CT8014")
    assert str(out) in r.stderr
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary file left behind


def test_a_file_that_fails_to_import_names_the_error(tmp_path: Path) -> None:
    f = tmp_path / "broken.py"
    f.write_text("import no_such_module_anywhere\n")
    r = run("compile", str(f), "-k", "x")
    assert_usage_error(r, "CT8011")
    assert "ModuleNotFoundError" in r.stderr and "no_such_module_anywhere" in r.stderr


def test_an_environment_variable_cutile_cannot_use_is_a_usage_error(
    fake_tileiras: Path,
) -> None:
    r = run("compile", str(EXAMPLES / "add.py"), "-k", "add", "-D", "B=128",
            CUTILE_TILEIRAS=str(fake_tileiras), CUTILE_CACHE_DIR="off",
            CUTILE_TILEIRAS_TIMEOUT="soon")
    assert_usage_error(r, "CT8006")


def test_explain_of_an_unknown_code_is_a_usage_error() -> None:
    assert_usage_error(run("explain", "CT9999"), "CT8016")


@pytest.mark.parametrize("args", [["explain"], ["info"]])
def test_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    # Like `python -m cutile explain | head -1` where head has already exited: every
    # write fails with EPIPE.
    proc = subprocess.Popen([sys.executable, "-m", "cutile", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_a_pipe_into_head_prints_no_error() -> None:
    r = subprocess.run(f"'{sys.executable}' -m cutile explain | head -n 1", shell=True,
                       capture_output=True, text=True, env=cli_env(), timeout=120)
    assert r.stdout.startswith("CT0001") and r.stderr == ""


def test_a_bug_in_cutile_is_one_line_with_the_version_and_exit_3() -> None:
    # Simulate a bug: the error-code table breaks while `explain` reads it.
    code = ("import cutile.error_codes as e\n"
            "def broken():\n    raise RuntimeError('table is gone\\nsecond line')\n"
            "e.all_codes = broken\n"
            "from cutile.cli import main\nraise SystemExit(main(['explain']))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=cli_env(), timeout=120)
    assert r.returncode == 3
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0] == "cutile: internal error: RuntimeError: table is gone"
    assert "please report this" in lines[1] and f"cutile {cutile.__version__}" in lines[1]
    assert len(lines) == 2
    debug = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=cli_env(CUTILE_LOG="debug"), timeout=120)
    assert "Traceback" in debug.stderr and debug.returncode == 3  # when asked for
