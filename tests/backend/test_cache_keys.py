"""A cache entry serves only the kernel it was stored for: it carries its full key
(kernel AST hash, Const values, argument facts, target, tileiras and bytecode versions,
cutile version) and is used only when that key matches. And a cache directory that cannot
be written costs speed, never a compile."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cutile
from cutile.backend import cache_entry
from cutile.backend.cache import MEMORY, cache_key
from cutile.backend.cache_entry import key_fields, key_hash
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import CacheWarning, ConfigError
from cutile.lowering.signature import Specialization, TensorFacts
from cutile.pipeline import kernel_identity


def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) * 2.0)


@pytest.fixture(autouse=True)
def fake_toolchain(monkeypatch: pytest.MonkeyPatch, fake_tileiras: Path,
                   tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    MEMORY.clear()
    yield tmp_path / "cache"
    MEMORY.clear()


def entries(directory: Path) -> set[Path]:
    return set(directory.rglob("*.cubin"))


def test_swapped_entries_are_recompiled_not_served(fake_toolchain: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    kernel = cutile.entry(copy)
    small = kernel.compile(B=128)
    (small_entry,) = entries(fake_toolchain)
    big = kernel.compile(B=256)
    (big_entry,) = entries(fake_toolchain) - {small_entry}
    assert small.cubin != big.cubin
    # Swap the two files, as a bad copy, a sync tool or a hand "fix" could.
    small_bytes, big_bytes = small_entry.read_bytes(), big_entry.read_bytes()
    small_entry.write_bytes(big_bytes)
    big_entry.write_bytes(small_bytes)
    MEMORY.clear()  # as in a new process
    with caplog.at_level(logging.WARNING, logger="cutile.cache"):
        again = kernel.compile(B=128)
    assert again.cubin == small.cubin  # never B=256's cubin for B=128
    assert again.from_cache == ""
    assert "stored for another key" in caplog.text and "kernel" in caplog.text
    assert small_entry.read_bytes() == small_bytes  # the entry is right again
    assert kernel.compile(B=256).cubin == big.cubin


def test_an_entry_copied_to_another_kernels_name_is_not_served(fake_toolchain: Path) -> None:
    one, two = cutile.entry(copy), cutile.entry(scale)
    first = one.compile(B=64)
    (first_entry,) = entries(fake_toolchain)
    second = two.compile(B=64)
    (second_entry,) = entries(fake_toolchain) - {first_entry}
    second_entry.write_bytes(first_entry.read_bytes())
    MEMORY.clear()
    assert two.compile(B=64).cubin == second.cubin != first.cubin


def identity(consts: tuple[tuple[str, int], ...] = (("B", 128),), align: bool = True,
             name: str = "copy", kast: str = "a" * 64) -> dict[str, Any]:
    facts = TensorFacts("f32", 1, align, True, (16,), (1,))
    spec = Specialization(consts, (("x", facts),))
    return kernel_identity(name, kast, spec)


def test_the_key_covers_every_input(monkeypatch: pytest.MonkeyPatch) -> None:
    bc = b"\x7fTileIR\x00\x0d\x03\x00\x00body"

    def key(**change: object) -> str:
        args: dict[str, object] = {"bytecode": bc, "arch": "sm_90", "opt_level": 3,
                                   "tool_version": "release 13.5", "kernel": identity()}
        args.update(change)
        return key_hash(key_fields(**args))  # type: ignore[arg-type]

    base = key()
    variants = {
        "kernel AST": key(kernel=identity(kast="b" * 64)),
        "kernel name": key(kernel=identity(name="copy2")),
        "Const value": key(kernel=identity(consts=(("B", 256),))),
        "argument facts": key(kernel=identity(align=False)),
        "target": key(arch="sm_100"),
        "opt level": key(opt_level=2),
        "tileiras": key(tool_version="release 13.4"),
        "bytecode": key(bytecode=bc + b"!"),
        "bytecode version": key(bytecode=bc.replace(b"\x0d\x03", b"\x0d\x04")),
    }
    monkeypatch.setattr(cache_entry, "__version__", "99.0")
    variants["cutile version"] = key()
    assert base not in variants.values()
    assert len(set(variants.values())) == len(variants)
    assert key_fields(bc, "sm_90", 3, "t")["bytecode_version"] == "13.3"
    assert len(cache_key(bc, "sm_90", 3, "t")) == 64


def test_an_unwritable_cache_directory_warns_once_and_compiles(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(blocker / "cache"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = cutile.entry(copy).compile(B=32)
        second = cutile.entry(scale).compile(B=32)
        again = cutile.entry(copy).compile(B=32)
    cache_warnings = [w for w in seen if issubclass(w.category, CacheWarning)]
    assert len(cache_warnings) == 1
    text = str(cache_warnings[0].message)
    assert "CT8901" in text and str(blocker / "cache") in text and "CUTILE_CACHE_DIR" in text
    assert first.cubin.startswith(b"FAKECUBIN") and second.cubin.startswith(b"FAKECUBIN")
    assert (first.from_cache, second.from_cache, again.from_cache) == ("", "", "memory")
    assert blocker.read_text() == "not a directory"


def test_a_bad_cache_bound_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_CACHE_MAX", "two gigs")
    with pytest.raises(ConfigError) as err:
        cutile.entry(copy).compile(B=16)
    assert err.value.code == "CT8003"
