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


@pytest.mark.parametrize("pdl", [False, True])
def test_an_entry_round_trips(cache: Path, pdl: bool) -> None:
    # `pdl` too: the launcher reads from the entry whether to launch with the PDL
    # attribute, so it must come back exactly as the compiled kernel had it.
    entry = launch_cache.LaunchEntry(b"\x7fELF fake cubin", "add_kernel", ABI, pdl)
    launch_cache.store(IDENTITY, "sm_90", 3, entry)
    assert launch_cache.load(IDENTITY, "sm_90") == entry


def test_a_pdl_kernel_and_its_plain_twin_are_two_entries(cache: Path) -> None:
    with_pdl = dict(IDENTITY, pdl=True)
    launch_cache.store(with_pdl, "sm_90", 3,
                       launch_cache.LaunchEntry(b"cubin pdl", "k", ABI, True))
    assert launch_cache.load(dict(IDENTITY, pdl=False), "sm_90") is None
    got = launch_cache.load(with_pdl, "sm_90")
    assert got is not None and got.pdl and got.cubin == b"cubin pdl"


def test_an_entry_serves_only_its_identity_target_and_opt_level(cache: Path) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI, False))
    other = dict(IDENTITY, consts=[["B", 256]])
    assert launch_cache.load(other, "sm_90") is None
    assert launch_cache.load(IDENTITY, "sm_100") is None
    assert launch_cache.load(IDENTITY, "sm_90", opt_level=2) is None


def test_a_change_in_cutiles_code_is_a_miss(cache: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI, False))
    monkeypatch.setattr(launch_cache, "_stamp", "another build of cutile")
    assert launch_cache.load(IDENTITY, "sm_90") is None


def test_a_damaged_entry_is_a_miss_not_an_error(cache: Path) -> None:
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI, False))
    for f in cache.rglob("*.cubin"):
        f.write_bytes(f.read_bytes()[:-3])
    assert launch_cache.load(IDENTITY, "sm_90") is None


def test_no_disk_cache_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_CACHE_DIR", "off")
    launch_cache.store(IDENTITY, "sm_90", 3, launch_cache.LaunchEntry(b"cubin", "k", ABI, False))
    assert launch_cache.load(IDENTITY, "sm_90") is None
