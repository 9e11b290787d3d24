"""The cubin cache: keys, the on-disk entry format, hits, corrupt entries, atomic writes.
(Entries that prove their key, the size bound and concurrent compiles:
test_cache_keys.py, test_cache_bound.py, test_cache_concurrency.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sample_kernels as sk
from hypothesis import given
from hypothesis import strategies as st

from cutile.backend.bytecode import write_bytecode
from cutile.backend.cache import (
    MEMORY,
    DiskCache,
    cache_dir,
    cache_key,
    compile_cubin,
    decode_entry,
    encode_entry,
)
from cutile.backend.tileiras import Tileiras


@pytest.fixture(autouse=True)
def empty_memory_cache() -> Iterator[None]:
    MEMORY.clear()
    yield
    MEMORY.clear()


def test_key_covers_every_input() -> None:
    base = cache_key(b"bc", "sm_90", 3, "release 13.5, V13.5.37")
    assert len(base) == 64 and base == cache_key(b"bc", "sm_90", 3, "release 13.5, V13.5.37")
    variants = [
        cache_key(b"bd", "sm_90", 3, "release 13.5, V13.5.37"),
        cache_key(b"bc", "sm_100", 3, "release 13.5, V13.5.37"),
        cache_key(b"bc", "sm_90", 2, "release 13.5, V13.5.37"),
        cache_key(b"bc", "sm_90", 3, "release 13.4, V13.4.92"),
        # Field boundaries are length-prefixed, so shifting bytes between fields changes it.
        cache_key(b"bc", "sm_9", 3, "0release 13.5, V13.5.37"),
    ]
    assert len({base, *variants}) == 6


def test_cache_dir_from_environment(tmp_path: Path) -> None:
    assert cache_dir({"CUTILE_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert cache_dir({"CUTILE_CACHE_DIR": "off"}) is None
    assert cache_dir({"CUTILE_CACHE_DIR": "OFF"}) is None
    assert cache_dir({}) == Path.home() / ".cache" / "cutile"


FIELDS = {"target": "sm_90", "kernel": {"name": "k", "consts": [["B", 128]]}}


@given(st.binary(max_size=300))
def test_entry_round_trip(cubin: bytes) -> None:
    entry = decode_entry(encode_entry(FIELDS, cubin))
    assert entry is not None and (entry.fields, entry.cubin) == (FIELDS, cubin)


@given(st.binary(min_size=1, max_size=200), st.data())
def test_truncated_or_flipped_entries_are_rejected(cubin: bytes, data: st.DataObject) -> None:
    entry = encode_entry(FIELDS, cubin)
    cut = data.draw(st.integers(0, len(entry) - 1))
    assert decode_entry(entry[:cut]) is None
    pos = data.draw(st.integers(0, len(entry) - 1))
    flipped = bytearray(entry)
    flipped[pos] ^= 1 << data.draw(st.integers(0, 7))
    assert decode_entry(bytes(flipped)) is None


def test_disk_cache_drops_a_corrupt_entry(tmp_path: Path) -> None:
    disk = DiskCache(tmp_path)
    key = "ab" + "0" * 62
    disk.put(key, FIELDS, b"cubin bytes")
    assert disk.get(key) == b"cubin bytes"
    path = disk.path(key)
    path.write_bytes(path.read_bytes()[:-3])  # truncated, e.g. by a full disk
    assert disk.get(key) is None
    assert not path.exists()


def test_writes_leave_no_temporary_files(tmp_path: Path) -> None:
    disk = DiskCache(tmp_path)
    for i in range(5):
        disk.put(f"{i:02d}" + "f" * 62, FIELDS, bytes([i]) * 100)
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert files == [f"{i:02d}{'f' * 62}.cubin" for i in range(5)]


def test_concurrent_writers_never_expose_a_partial_entry(tmp_path: Path) -> None:
    # Writers keep replacing one entry with cubins of different sizes while readers read
    # it: with write-then-rename every read sees one whole entry.
    disk = DiskCache(tmp_path)
    key = "cd" + "1" * 62
    small, large = b"s" * 10, b"L" * 200_000
    disk.put(key, FIELDS, small)
    stop = threading.Event()
    bad: list[int] = []
    seen: set[bytes] = set()

    def write(cubin: bytes) -> None:
        while not stop.is_set():
            disk.put(key, FIELDS, cubin)

    def read() -> None:
        for _ in range(300):
            data = disk.path(key).read_bytes()
            entry = decode_entry(data)
            if entry is None:
                bad.append(len(data))
            else:
                seen.add(entry.cubin[:1])

    writers = [threading.Thread(target=write, args=(c,)) for c in (small, large)]
    readers = [threading.Thread(target=read) for _ in range(4)]
    for t in writers + readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    for t in writers:
        t.join()
    assert bad == []
    assert seen <= {b"s", b"L"}


@pytest.mark.tileiras
def test_compile_then_memory_then_disk_hits(tool: Tileiras, tmp_path: Path) -> None:
    env = {"CUTILE_CACHE_DIR": str(tmp_path)}
    bc = write_bytecode(sk.vector_add_f32())
    first = compile_cubin(bc, "sm_90", 3, tool=tool, environ=env)
    assert first.from_cache == "" and first.compile_s > 0 and first.cubin[:4] == b"\x7fELF"
    again = compile_cubin(bc, "sm_90", 3, tool=tool, environ=env)
    assert (again.from_cache, again.cubin, again.key) == ("memory", first.cubin, first.key)
    MEMORY.clear()  # as in a new process
    from_disk = compile_cubin(bc, "sm_90", 3, tool=tool, environ=env)
    assert (from_disk.from_cache, from_disk.cubin) == ("disk", first.cubin)
    assert DiskCache(tmp_path).path(first.key).is_file()


@pytest.mark.tileiras
@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_corrupt_entry_is_recompiled(tool: Tileiras, tmp_path: Path, damage: str) -> None:
    env = {"CUTILE_CACHE_DIR": str(tmp_path)}
    bc = write_bytecode(sk.saxpy())
    good = compile_cubin(bc, tool=tool, environ=env)
    path = DiskCache(tmp_path).path(good.key)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) - 100]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    MEMORY.clear()
    rebuilt = compile_cubin(bc, tool=tool, environ=env)
    assert rebuilt.from_cache == "" and rebuilt.cubin == good.cubin
    rewritten = decode_entry(path.read_bytes())  # the entry was rewritten whole
    assert rewritten is not None and rewritten.cubin == good.cubin


@pytest.mark.tileiras
def test_disk_cache_off(tool: Tileiras, tmp_path: Path) -> None:
    env = {"CUTILE_CACHE_DIR": "off", "HOME": str(tmp_path)}
    bc = write_bytecode(sk.exp_2d())
    assert compile_cubin(bc, tool=tool, environ=env).from_cache == ""
    assert compile_cubin(bc, tool=tool, environ=env).from_cache == "memory"
    MEMORY.clear()
    assert compile_cubin(bc, tool=tool, environ=env).from_cache == ""  # nothing on disk
    assert list(tmp_path.rglob("*.cubin")) == []


@pytest.mark.tileiras
def test_other_arch_or_level_is_another_entry(tool: Tileiras, tmp_path: Path) -> None:
    env = {"CUTILE_CACHE_DIR": str(tmp_path)}
    bc = write_bytecode(sk.vector_add_f32())
    a = compile_cubin(bc, "sm_90", 3, tool=tool, environ=env)
    b = compile_cubin(bc, "sm_90", 0, tool=tool, environ=env)
    c = compile_cubin(bc, "sm_100", 3, tool=tool, environ=env)
    assert len({a.key, b.key, c.key}) == 3
    assert b.from_cache == "" and c.from_cache == ""
    assert len(list(tmp_path.rglob("*.cubin"))) == 3
