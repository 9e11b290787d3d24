"""Ranges and pieces of tiles: `arange(start, stop, step)`, `cat`, `extract` and static
slicing `t[a:b]`, `t[:, a:b:s]`, `t[i]`, `t[None, a:b]` (Tile IR `iota`, `extract`, `cat`,
`reshape`), on the active backend against numpy on random inputs, ragged tiles included;
misuse is a typed CT307x error, and each kernel assembles to an sm_90 cubin."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    block_id,
    cat,
    extract,
    f16,
    f32,
    i32,
    i64,
    load_tile_like,
    num_tiles,
)
from cutile.errors import KernelCheckError

rng = np.random.default_rng(11)


# ---------------------------------------------------------------------------- arange
@cutile.entry
def ranges(a: Mut[Tensor[i32, ["N"]]], b: Mut[Tensor[i32, [8]]], c: Mut[Tensor[f32, [8]]],
           d: Mut[Tensor[f16, [4]]], e: Mut[Tensor[i64, [4]]], N: Const[int]):
    a.store(arange(N) + block_id(0) * N)           # arange(n) still works
    b.store(arange(30, -2, -4))                    # counting down
    c.store(arange(0.5, 4.5, 0.5))                 # float bounds: f32
    d.store(arange(1, 9, 2, f16))
    e.store(arange(3000000000, 3000000004, dtype=i64))


@cutile.entry
def legacy_arange(z: Mut[Tensor[f32, [32]]]):
    z.store(arange(32, f32) * 0.5 + arange(n_or_stop(), dtype=f32))


@cutile.device
def n_or_stop():
    return 32


def test_arange_forms() -> None:
    outs = [api.zeros([16], i32).partition([16]), api.zeros([8], i32).partition([8]),
            api.zeros([8], f32).partition([8]), api.zeros([4], f16).partition([4]),
            api.zeros([4], i64).partition([4])]
    a, b, c, d, e = (t.unpartition().to_numpy() for t in ranges(*outs).sync())
    np.testing.assert_array_equal(a, np.arange(16))
    np.testing.assert_array_equal(b, np.arange(30, -2, -4))
    np.testing.assert_array_equal(c, np.arange(0.5, 4.5, 0.5, dtype=np.float32))
    np.testing.assert_array_equal(d, np.arange(1, 9, 2).astype(np.float16))
    np.testing.assert_array_equal(e, np.arange(3000000000, 3000000004))
    (z,) = legacy_arange(api.zeros([32], f32).partition([32])).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(32) * 1.5)


def test_arange_is_spelled_start_stop_step_for_every_reader() -> None:
    import json

    doc = json.loads(legacy_arange.kast_json())
    calls = []

    def walk(e: Any) -> None:
        if isinstance(e, dict):
            if e.get("kind") == "call" and e.get("func") == "arange":
                calls.append(e["args"])
            for v in e.values():
                walk(v)
        elif isinstance(e, list):
            for v in e:
                walk(v)

    walk(doc)
    first, second = calls
    assert [a.get("value") for a in first[:3]] == [0, 32, 1] and first[3]["name"] == "f32"
    assert second[1]["kind"] == "call_device"


# ---------------------------------------------------------------------------- cat, extract
@cutile.entry
def halves_swapped(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    lo = extract(t, (0,), (B // 2,))
    hi = t.extract((1,), (B // 2,))
    z.store(cat((hi, lo), 0))


@cutile.entry
def quarters(z: Mut[Tensor[f32, [8, 32]]], x: Tensor[f32, [-1, -1]], y: Tensor[f16, [-1, -1]]):
    t = x.load_tile((8, 8), (block_id(0), 0))
    u = y.load_tile((8, 8), (block_id(0), 0))
    z.store(cat((t, u, t * 2.0, u), axis=-1))     # f16 promotes to f32; sizes 8+8+8+8


@cutile.entry
def rotate_blocks(z: Mut[Tensor[f32, [4, 16]]], x: Tensor[f32, [-1, -1]], k: i32):
    t = x.load_tile((4, 64), (block_id(0), 0))
    z.store(extract(t, (0, k + block_id(0)), (4, 16)))   # runtime index: modulo 4


def test_extract_and_cat_swap_halves_of_ragged_tiles() -> None:
    n = 100
    xs = rng.standard_normal(n).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([64])
    z, _ = halves_swapped(z, api.from_numpy(xs)).sync()
    padded = np.concatenate([xs, np.zeros(28, np.float32)]).reshape(2, 2, 32)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), padded[:, ::-1].ravel()[:n])


def test_cat_joins_pairwise_and_promotes() -> None:
    xs = rng.standard_normal((16, 8)).astype(np.float32)
    ys = rng.standard_normal((16, 8)).astype(np.float16)
    z = api.zeros([16, 32], f32).partition([8, 32])
    z, _, _ = quarters(z, api.from_numpy(xs), api.from_numpy(ys)).sync()
    y32 = ys.astype(np.float32)
    np.testing.assert_array_equal(z.unpartition().to_numpy(),
                                  np.concatenate([xs, y32, xs * 2, y32], axis=1))


@pytest.mark.parametrize("k", [0, 3, -1, 5, -6])
def test_extract_at_a_runtime_index_wraps_modulo_the_count(k: int) -> None:
    xs = rng.standard_normal((12, 64)).astype(np.float32)
    z = api.zeros([12, 16], f32).partition([4, 16])
    z, _, _ = rotate_blocks(z, api.from_numpy(xs), k).sync()
    want = np.concatenate([xs[4 * b:4 * b + 4, 16 * ((k + b) % 4):16 * ((k + b) % 4) + 16]
                           for b in range(3)])
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


# ---------------------------------------------------------------------------- slicing
@cutile.entry
def slices_1d(z: Mut[Tensor[f32, [64]]], w: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]]):
    t = x.load_tile((128,), (block_id(0),))
    z.store(cat((t[:16], t[-16:], t[2:18], t[1:65:4][:8], t[120:200]), 0))
    w.store(t[3::16])


@cutile.entry
def slices_2d(z: Mut[Tensor[f32, [4, 8, 2]]], x: Tensor[f32, [-1, -1]]):
    t = x.load_tile((16, 32), (block_id(0), 0))
    a = t[4:8, 8:16]                    # [4, 8]
    b = t[::4, 1::4][:, :8]             # [4, 8]
    c = t[3, None, 16:24]               # an index drops the axis; None adds one: [1, 8]
    z.store(cat((a[:, :, None], (b + c)[:, :, None]), 2))


@cutile.entry
def tuple_slices(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
                 BN: Const[int]):
    t = x.load_tile(z.tile_shape[0:2], (block_id(0), block_id(1)))
    n = num_tiles(x, 1, z.tile_shape[-2:])
    z.store(t + n)


def test_static_slices_of_a_1d_tile() -> None:
    xs = rng.standard_normal(256).astype(np.float32)
    z = api.zeros([128], f32).partition([64])
    w = api.zeros([16], f32).partition([8])
    z, w, _ = slices_1d(z, w, api.from_numpy(xs)).sync()
    got, every16 = z.unpartition().to_numpy().reshape(2, 64), w.unpartition().to_numpy()
    for blk, t in enumerate(xs.reshape(2, 128)):
        want = np.concatenate([t[:16], t[-16:], t[2:18], t[1:65:4][:8], t[120:200]])
        np.testing.assert_array_equal(got[blk], want)   # past the end: clipped, as numpy
        np.testing.assert_array_equal(every16[8 * blk:8 * blk + 8], t[3::16])


def test_static_slices_of_a_2d_tile_index_and_new_axis() -> None:
    xs = rng.standard_normal((20, 32)).astype(np.float32)   # ragged: rows past 20 are padding
    z = api.zeros([8, 8, 2], f32).partition([4, 8, 2])
    z, _ = slices_2d(z, api.from_numpy(xs)).sync()
    got = z.unpartition().to_numpy()
    padded = np.zeros((32, 32), np.float32)
    padded[:20] = xs
    for blk in range(2):
        t = padded[16 * blk:16 * blk + 16]
        want = np.stack([t[4:8, 8:16], t[::4, 1::4][:, :8] + t[3, None, 16:24]], axis=2)
        np.testing.assert_array_equal(got[4 * blk:4 * blk + 4], want)


def test_tuples_slice_too() -> None:
    xs = rng.standard_normal((16, 24)).astype(np.float32)
    z = api.zeros([16, 24], f32).partition([8, 8])
    z, _ = tuple_slices(z, api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs + 3)


def test_a_slice_is_spelled_as_the_slice_builtin(tmp_path: Any) -> None:
    import json

    k = _kernel("z.store(t[0, slice(8)] + t[1, :8] + t[2, 8:])", tmp_path)
    k.lowered(k.specialization({}))
    subs: list[Any] = []

    def walk(e: Any) -> None:
        if isinstance(e, dict):
            if e.get("kind") == "subscript":
                subs.append(e["index"])
            for v in e.values():
                walk(v)
        elif isinstance(e, list):
            for v in e:
                walk(v)

    walk(json.loads(k.kast_json()))
    spelled = [[(a.get("value"), a["type"]) for a in ix["elts"][1]["args"]] for ix in subs]
    none = (None, "none")
    assert spelled == [[none, (8, "int"), none], [none, (8, "int"), none],
                       [(8, "int"), none, none]]
    assert {ix["elts"][1]["func"] for ix in subs} == {"builtins.slice"}


def test_full_slices_indices_and_new_axes_mix(tmp_path: Any) -> None:
    # `t[:]` is the tile, `t[0, None]` a row as [1, 16]; `t[None, :, 2]` alone would be
    # expand_dims calls, with an index it is a slice like any other.
    k = _kernel("z.store(t[:][1, 8:] + t[0, None][0, :8] + t[None, :8, 2][0])", tmp_path)
    xs = rng.standard_normal((32, 16)).astype(np.float32)
    z = api.zeros([16], f32).partition([8])
    z, _, _ = k(z, api.from_numpy(xs), 0).sync()
    got = z.unpartition().to_numpy()
    for b, t in enumerate(xs.reshape(2, 16, 16)):
        np.testing.assert_array_equal(got[8 * b:8 * b + 8], t[1, 8:] + t[0, :8] + t[:8, 2])


# ---------------------------------------------------------------------------- refusals
def _kernel(body: str, tmp_path: Any) -> Any:
    return load_kernel(tmp_path, "@cutile.entry\n"
                       "def k(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1, -1]], n: i32):\n"
                       "    t = x.load_tile((16, 16), (block_id(0), 0))\n"
                       f"    {body}\n")


@pytest.mark.parametrize(("body", "code", "needle"), [
    ("z.store(arange(0, 12).astype(f32)[:8])", "CT3070", "makes 12 elements"),
    ("z.store(arange(0, 8, 0))", "CT3070", "step other than 0"),
    ("z.store(arange(0.0, 8.0, dtype=i32))", "CT3070", "float bounds"),
    ("z.store(arange(126, 134, dtype=i8))", "CT3070", "reaches 133"),
    ("z.store(arange(n, n + 8))", "CT3034", "compile-time numbers"),
    ("z.store(t[0, 1:7])", "CT3071", "has 6 elements"),
    ("z.store(t[0, n:n + 8])", "CT3071", "compile-time integers"),
    ("z.store(t[0, 8:0:-1])", "CT3071", "sliced forward"),
    ("z.store(t[0, 0:16:3][:4])", "CT3071", "has 6 elements"),
    ("z.store(t[16, :8])", "CT3071", "index 16 is out of range"),
    ("z.store(t[n, :8])", "CT3071", "compile-time integers, slices"),
    ("z.store(t[0, 0, 0])", "CT3071", "3 indices for a tile of rank 2"),
    ("z.store(cat((t[0, :8], t[1, :4]), 0)[:8])", "CT3072", "cannot be joined"),
    ("z.store(cat((t[0, :4], t[:4, :4]), 0)[0, :8])", "CT3072", "do not line up"),
    ("z.store(cat((t[0, :4], 1.0), 0))", "CT3072", "a tuple of tiles"),
    ("z.store(cat((t[0, :4], t[0, :4]), 1))", "CT3046", "axis 1 out of range"),
    ("z.store(extract(t, (0, 0), (16, 6))[0, :8])", "CT3073", "do not divide"),
    ("z.store(extract(t, (0, 2), (16, 8))[0, :8])", "CT3073", "sub-tile 2 does not exist"),
    ("z.store(extract(t, (0,), (16, 8))[0, :8])", "CT3073", "the index has 1 entries"),
    ("z.store(extract(t, (0, 0.5), (16, 8))[0, :8])", "CT3073", "indices are integers"),
])
def test_misuse_is_a_typed_error(body: str, code: str, needle: str, tmp_path: Any) -> None:
    k = _kernel(body, tmp_path)
    k.check()                                     # the checker and the linter accept it
    with pytest.raises(KernelCheckError) as info:
        k.lowered(k.specialization({}))
    assert info.value.codes == [code], str(info.value)
    assert needle in str(info.value)


def test_a_runtime_extract_index_needs_no_check_and_is_masked() -> None:
    module = rotate_blocks.lowered(rotate_blocks.specialization({})).module
    names = [op.name for op in module.functions[0].body.walk()]
    assert "extract" in names and "andi" in names and "assert" not in names


# ---------------------------------------------------------------------------- sm_90 cubins
ASSEMBLED: list[tuple[Any, dict[str, Any]]] = [
    (ranges, {"N": 16}),
    (legacy_arange, {}),
    (halves_swapped, {"B": 64}),
    (quarters, {}),
    (rotate_blocks, {}),
    (slices_1d, {}),
    (slices_2d, {}),
    (tuple_slices, {"BM": 8, "BN": 8}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), ASSEMBLED, ids=lambda v: getattr(v, "name", ""))
def test_each_kernel_assembles_for_sm_90(kernel: Any, consts: dict[str, Any]) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"
