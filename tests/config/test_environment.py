"""The environment variables cutile reads: one registry, typed errors for values it cannot
use, and the README's table listing every one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cutile import environment
from cutile.errors import ConfigError
from cutile.runtime import driver

ROOT = Path(__file__).resolve().parents[2]


def test_every_variable_the_package_reads_is_registered() -> None:
    # A new knob that skips the registry would be missing from `info` and the README.
    read: set[str] = set()
    for f in (ROOT / "python" / "cutile").rglob("*.py"):
        read |= set(re.findall(r"\b(CUTILE_[A-Z_]+|CUDA_HOME|CUDA_PATH)\b", f.read_text()))
    assert read - environment.NAMES == set()


def test_the_readme_documents_every_variable_in_one_table() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \|", readme, flags=re.MULTILINE)
    assert set(rows) >= environment.NAMES
    assert len(rows) == len(set(rows))


def test_an_unknown_backend_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_BACKEND", "gpus")
    driver.reset_for_tests(None)
    try:
        with pytest.raises(ConfigError) as err:
            driver.backend()
    finally:
        monkeypatch.undo()
        driver.reset_for_tests(None)
    assert err.value.code == "CT8001"
    assert "`gpu`" in str(err.value) and "`interpreter`" in str(err.value)
    assert err.value.hint


@pytest.mark.parametrize("raw,expected", [("gpu", "gpu"), (" Interpreter ", "interpreter"),
                                          ("cpu", "interpreter"), ("", None)])
def test_backend_spellings(monkeypatch: pytest.MonkeyPatch, raw: str,
                           expected: str | None) -> None:
    monkeypatch.setenv("CUTILE_BACKEND", raw)
    assert driver.forced_backend() == expected


@pytest.mark.parametrize("raw", ["first", "-1", "2"])
def test_a_bad_device_ordinal_is_a_typed_error(monkeypatch: pytest.MonkeyPatch,
                                               raw: str) -> None:
    monkeypatch.setenv("CUTILE_DEVICE", raw)
    with pytest.raises(ConfigError) as err:
        driver._ordinal("CUTILE_DEVICE", raw, 2, "visible GPUs")
    assert err.value.code == "CT8002"
    assert "0 to 1" in (err.value.hint or "")
    assert driver._ordinal("CUTILE_DEVICE", "1", 2, "visible GPUs") == 1
    assert driver._ordinal("CUTILE_DEVICE", None, 2, "visible GPUs") == 0


@pytest.mark.parametrize("raw", ["0", "17", "two"])
def test_a_bad_interpreter_device_count_is_a_typed_error(monkeypatch: pytest.MonkeyPatch,
                                                         raw: str) -> None:
    monkeypatch.setenv("CUTILE_INTERPRETER_DEVICES", raw)
    with pytest.raises(ConfigError) as err:
        driver._interpreter_devices()
    assert err.value.code == "CT8009"


@pytest.mark.parametrize("text,expected", [
    ("500M", 500 << 20), ("2G", 2 << 30), ("2g", 2 << 30), ("1.5GiB", 3 << 29),
    ("4096", 4096), ("64k", 64 << 10), ("10 MB", 10 << 20),
    ("lots", None), ("-1G", None), ("2X", None), ("", None),
])
def test_sizes(text: str, expected: int | None) -> None:
    assert environment.parse_size(text) == expected


def test_a_bad_size_is_a_typed_error() -> None:
    with pytest.raises(ConfigError) as err:
        environment.size("CUTILE_CACHE_MAX", 1, "CT8003", environ={"CUTILE_CACHE_MAX": "big"})
    assert err.value.code == "CT8003" and "500M" in str(err.value)
    assert environment.size("CUTILE_CACHE_MAX", 7, "CT8003", environ={}) == 7


def test_a_bad_tileiras_timeout_is_a_typed_error() -> None:
    from cutile.backend.tileiras import _timeout_from_env

    assert _timeout_from_env({"CUTILE_TILEIRAS_TIMEOUT": "12.5"}) == 12.5
    assert _timeout_from_env({}) == 300
    for bad in ("soon", "0", "-3", "nan"):
        with pytest.raises(ConfigError) as err:
            _timeout_from_env({"CUTILE_TILEIRAS_TIMEOUT": bad})
        assert err.value.code == "CT8006"
