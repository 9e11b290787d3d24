"""Adversarial review (2026-12), the caches keyed by what a kernel is: an entry of the
launch cache (identity-keyed, `backend/launch_cache.py`) or of the autotune store copied,
linked or hand-edited under another kernel's key is never served for it, and a damaged one
is a miss (rebuilt), never an untyped exception. The bytecode-keyed cubin cache has its own
tests (`test_cache_keys.py`, `test_cubin_cache.py`)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

import cutile
from cutile import api, pipeline
from cutile.backend import launch_cache
from cutile.backend.cache_entry import key_hash
from cutile.backend.disk_cache import DiskCache
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


def _scaled(factor: float) -> Any:
    # Two kernels of one name, qualname and source, told apart only by the folded factor.
    @cutile.entry
    def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):  # type: ignore[no-untyped-def]
        z.store(load_tile_like(x, z) * factor)
    return scale


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_AUTOTUNE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def gpu_load(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`kernel._load_for_gpu` without a GPU: the cubin a launch would load on sm_90."""
    from cutile.runtime import driver, launch

    monkeypatch.setattr(driver, "arch", lambda device=None: "sm_90")
    monkeypatch.setattr(launch, "LoadedKernel", lambda cubin, *rest: cubin)

    def load(k: Any) -> bytes:
        return bytes(k._load_for_gpu(k.specialization({"B": 128}), 0, False))
    return load


def launch_entry_path(k: Any, cache: Path) -> Path:
    spec = k.specialization({"B": 128})
    want = launch_cache.fields(k.identity(spec), "sm_90", k.opt_level)
    return DiskCache(cache).path(key_hash(want))


def own_cubin(k: Any) -> bytes:
    return pipeline.assemble(k.lowered(k.specialization({"B": 128})), "sm_90").cubin


@pytest.mark.tileiras
@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_another_kernels_launch_entry_under_this_key_is_not_loaded(
        cache: Path, gpu_load: Any, how: str) -> None:
    a, b = _scaled(2.0), _scaled(3.0)
    a_cubin = gpu_load(a)
    a_path = launch_entry_path(a, cache)
    assert a_path.exists()
    b_path = launch_entry_path(b, cache)
    b_path.parent.mkdir(parents=True, exist_ok=True)
    if how == "copy":
        shutil.copyfile(a_path, b_path)
    else:
        os.symlink(a_path, b_path)
    got = gpu_load(_scaled(3.0))  # a fresh kernel object: no in-memory shortcut
    assert got != a_cubin and got == own_cubin(b)
    # the rebuilt entry replaced the link, not the file it pointed at
    assert not b_path.is_symlink()
    assert gpu_load(_scaled(2.0)) == a_cubin


PAYLOADS = {
    "empty": b"",
    "magic only": launch_cache._MAGIC,
    "header longer than the payload": launch_cache._MAGIC + struct.pack("<I", 1 << 30) + b"{}",
    "header not an object": launch_cache._MAGIC + struct.pack("<I", 2) + b"[]" + b"cubin",
    "slot of three": None,
    "slot axis not a number": None,
    "pdl not a bool": None,
    "no cubin": None,
}


def _header(**changes: Any) -> dict[str, Any]:
    h: dict[str, Any] = {"entry_name": "scale", "pdl": False, "pdl_early": [],
                         "slots": [["ptr", "z", 0, "i"]]}
    h.update(changes)
    return h


def _payload(header: dict[str, Any], cubin: bytes = b"\x7fELF") -> bytes:
    text = json.dumps(header).encode()
    return launch_cache._MAGIC + struct.pack("<I", len(text)) + text + cubin


PAYLOADS.update({
    "slot of three": _payload(_header(slots=[["ptr", "z", 0]])),
    "slot axis not a number": _payload(_header(slots=[["ptr", "z", "zero", "i"]])),
    "pdl not a bool": _payload(_header(pdl="yes")),
    "no cubin": _payload(_header(), b""),
})


@pytest.mark.tileiras
@pytest.mark.parametrize("damage", sorted(PAYLOADS))
def test_a_malformed_launch_entry_is_a_miss(cache: Path, damage: str) -> None:
    # Well-formed as a cache entry (its key proves, its digest matches), malformed inside:
    # what a crash of an older cutile or a hand edit with a recomputed digest leaves.
    identity = _scaled(2.0).identity(_scaled(2.0).specialization({"B": 128}))
    want = launch_cache.fields(identity, "sm_90", 3)
    assert DiskCache(cache).put(key_hash(want), want, PAYLOADS[damage] or b"")
    assert launch_cache.load(identity, "sm_90") is None


# -- the autotune store ----------------------------------------------------------------------

def _tune(k: Any) -> Any:
    tuned = cutile.autotune(k, configs=[cutile.Config({"B": 64}), cutile.Config({"B": 128})])
    tuned(api.zeros([256], f32), api.ones([256], f32)).sync()
    return tuned


def stored(cache: Path) -> set[Path]:
    return set((cache / "autotune").glob("*.json"))


def test_another_kernels_tuning_choice_under_this_key_is_not_used(
        cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    _tune(_scaled(2.0))
    (a_entry,) = stored(cache)
    _tune(_scaled(3.0))
    (b_entry,) = stored(cache) - {a_entry}
    shutil.copyfile(a_entry, b_entry)
    again = _tune(_scaled(3.0))
    assert again.stats["tunings"] == 1 and "another key" in caplog.text


@pytest.mark.parametrize("edit", ["index out of range", "config changed", "index a string"])
def test_a_hand_edited_tuning_choice_is_tuned_again(cache: Path, edit: str) -> None:
    _tune(_scaled(2.0))
    (entry,) = stored(cache)
    data = json.loads(entry.read_text())
    if edit == "index out of range":
        data["choice"]["index"] = 7
    elif edit == "config changed":
        data["choice"]["config"]["consts"] = {"B": 32}
    else:
        data["choice"]["index"] = "0"
    entry.write_text(json.dumps(data))
    again = _tune(_scaled(2.0))
    assert again.stats["tunings"] == 1


@pytest.mark.tileiras
@pytest.mark.parametrize("claim", ["pdl", "another entry symbol", "a parameter it lacks"])
def test_a_launch_entry_claiming_what_the_kernel_is_not_is_not_loaded(
        cache: Path, gpu_load: Any, claim: str) -> None:
    # An entry's digest proves it intact, not who wrote it: one that says the kernel has
    # the PDL prologue (launched with the PDL attribute, a kernel without the wait would
    # overlap the previous one) or another ABI was loaded as is before the fix.
    k = _scaled(2.0)
    want = launch_cache.fields(k.identity(k.specialization({"B": 128})), "sm_90", 3)
    header = {"pdl": _header(pdl=True),
              "another entry symbol": _header(entry_name="other"),
              "a parameter it lacks": _header(slots=[["ptr", "w", 0, "i"]])}[claim]
    assert DiskCache(cache).put(key_hash(want), want, _payload(header, b"forged cubin"))
    assert gpu_load(k) == own_cubin(k)
