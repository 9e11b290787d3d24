"""The launch cache: a kernel assembled once loads in a fresh process from its identity,
without lowering or bytecode; an entry serves only its own identity, target and code."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile.backend import launch_cache
from cutile.lowering.signature import KernelABI, Slot

pytestmark = pytest.mark.tileiras

ABI = KernelABI((Slot("ptr", "z"), Slot("shape", "z", 0, "i"), Slot("stride", "z", 0, "i")))
IDENTITY = {"name": "add", "kast_sha256": "ab" * 32, "consts": [["B", 128]], "tensors": [],
            "index_bits": 32}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_an_entry_round_trips(cache: Path) -> None:
    entry = launch_cache.LaunchEntry(b"\x7fELF fake cubin", "add_kernel", ABI)
    launch_cache.store(IDENTITY, "sm_90", 3, entry)
    assert launch_cache.load(IDENTITY, "sm_90") == entry


def test_an_entry_serves_only_its_identity_target_and_opt_level(cache: Path) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI))
    other = dict(IDENTITY, consts=[["B", 256]])
    assert launch_cache.load(other, "sm_90") is None
    assert launch_cache.load(IDENTITY, "sm_100") is None
    assert launch_cache.load(IDENTITY, "sm_90", opt_level=2) is None


def test_a_change_in_cutiles_code_is_a_miss(cache: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI))
    monkeypatch.setattr(launch_cache, "_stamp", "another build of cutile")
    assert launch_cache.load(IDENTITY, "sm_90") is None


def test_a_damaged_entry_is_a_miss_not_an_error(cache: Path) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI))
    for f in cache.rglob("*.cubin"):
        f.write_bytes(f.read_bytes()[:-3])
    assert launch_cache.load(IDENTITY, "sm_90") is None


def test_no_disk_cache_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_CACHE_DIR", "off")
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI))
    assert launch_cache.load(IDENTITY, "sm_90") is None
