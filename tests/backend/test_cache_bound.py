"""The cubin cache stays under its bound (CUTILE_CACHE_MAX, default 2 GiB) by dropping the
least recently used entries; `python -m cutile cache info|clear|prune` looks at it and
trims it by hand, removing nothing it did not write."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import cutile
from cutile.backend.cache import DEFAULT_MAX_BYTES, MEMORY, cache_max
from cutile.backend.disk_cache import DiskCache
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])
FIELDS = {"target": "sm_90"}


def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


@pytest.fixture(autouse=True)
def empty_memory_cache() -> Iterator[None]:
    MEMORY.clear()
    yield
    MEMORY.clear()


def key(i: int) -> str:
    return f"{i:02x}" + "0" * 62


def fill(disk: DiskCache, n: int, size: int) -> None:
    """n entries of about `size` bytes, used one second apart (entry 0 longest ago)."""
    now = time.time()
    for i in range(n):
        disk.put(key(i), FIELDS, bytes(size))
        os.utime(disk.path(key(i)), (now - 100 + i, now - 100 + i))


def test_prune_drops_the_least_recently_used_first(tmp_path: Path) -> None:
    disk = DiskCache(tmp_path)
    fill(disk, 5, 1000)
    entry = disk.path(key(0)).stat().st_size
    assert disk.get(key(0), FIELDS) == bytes(1000)  # a hit makes entry 0 the newest
    removed, freed = disk.prune(3 * entry)
    assert (removed, freed) == (2, 2 * entry)
    left = {p.name[:2] for p in tmp_path.rglob("*.cubin")}
    assert left == {"00", "03", "04"}
    assert disk.usage().bytes <= 3 * entry


def test_compiles_keep_the_cache_under_its_bound(monkeypatch: pytest.MonkeyPatch,
                                                 fake_tileiras: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path))
    kernel = cutile.entry(copy)
    files: dict[int, Path] = {}
    for b in (64, 128):
        before = set(tmp_path.rglob("*.cubin"))
        kernel.compile(B=b)
        (files[b],) = set(tmp_path.rglob("*.cubin")) - before
        time.sleep(0.02)  # distinct last-use times
    biggest = max(p.stat().st_size for p in files.values())
    monkeypatch.setenv("CUTILE_CACHE_MAX", str(2 * biggest + biggest // 2))  # room for two
    MEMORY.clear()
    assert kernel.compile(B=64).from_cache == "disk"  # B=64 is now the most recent
    time.sleep(0.02)
    kernel.compile(B=256)
    assert files[64].exists() and not files[128].exists()
    assert len(list(tmp_path.rglob("*.cubin"))) == 2


@pytest.mark.parametrize(("raw", "expected"), [(None, DEFAULT_MAX_BYTES), ("500M", 500 << 20),
                                               ("2G", 2 << 30), ("123", 123)])
def test_the_bound_comes_from_cutile_cache_max(raw: str | None, expected: int) -> None:
    assert DEFAULT_MAX_BYTES == 2 << 30
    assert cache_max({} if raw is None else {"CUTILE_CACHE_MAX": raw}) == expected


def cli(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, CUTILE_CACHE_DIR=str(cache))
    full.pop("CUTILE_CACHE_MAX", None)
    full.update(env)
    return subprocess.run([sys.executable, "-m", "cutile", "cache", *args],
                          capture_output=True, text=True, env=full, timeout=120)


def test_cache_info_prune_and_clear(tmp_path: Path) -> None:
    disk = DiskCache(tmp_path)
    fill(disk, 4, 10_000)
    mine = tmp_path / "notes.txt"  # CUTILE_CACHE_DIR may point at a directory with other files
    mine.write_text("keep me")
    (tmp_path / "ab").mkdir(exist_ok=True)
    (tmp_path / "ab" / "README").write_text("keep me too")

    info = cli(cache=tmp_path)
    assert info.returncode == 0, info.stderr
    assert f"cache: {tmp_path}" in info.stdout
    assert "entries: 4 (39." in info.stdout and "2.0 GiB bound" in info.stdout
    assert cli("info", cache=tmp_path).stdout == info.stdout

    pruned = cli("prune", "--max", "25k", cache=tmp_path)
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 2 least recently used entries" in pruned.stdout
    assert {p.name[:2] for p in tmp_path.rglob("*.cubin")} == {"02", "03"}

    by_env = cli("prune", cache=tmp_path, CUTILE_CACHE_MAX="12k")
    assert "removed 1 " in by_env.stdout

    cleared = cli("clear", cache=tmp_path)
    assert cleared.returncode == 0 and "removed 1 entries" in cleared.stdout
    assert list(tmp_path.rglob("*.cubin")) == []
    assert mine.read_text() == "keep me"
    assert (tmp_path / "ab" / "README").read_text() == "keep me too"


def test_cache_prune_with_a_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    r = cli("prune", "--max", "lots", cache=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error[CT8003]")
