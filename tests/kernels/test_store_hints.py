"""Store hints: `z.store`, `p.store` (a sub-partition) and `z.store_unchecked` take
`latency=` and `allow_tma=` as loads do, each a compile-time value or a
`cutile.ByTarget(...)`. They go into the store's `optimization_hints`; `allow_tma=False`
makes tileiras write the tile straight from registers (STG) instead of staging it in shared
memory for a TMA store (UTMASTG). Hints never change values: every hinted store writes
exactly what the unhinted one writes, on the active backend."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

from cutile import api
from cutile.core import f32
from cutile.dump import sass
from cutile.errors import KernelCheckError

rng = np.random.default_rng(39)

# A row normalization (each row divided by its sum): after the reduction tileiras stages the
# result in shared memory and stores it with TMA on sm_90 unless the store says otherwise.
# `rows` stores the whole tile; `halves` stores it as two sub-tiles (the second lies wholly
# past the end of a row shorter than BN // 2: a conditional store); `shifted` stores it
# with `store_unchecked` one tile down (the last block's wraps to the first tile).
KERNELS = """
@cutile.entry
def rows(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
         BN: Const[int], TMA: Const[bool], LAT: Const[int]):
    t = load_tile_like(x, z)
    z.store(t / t.sum(axis=1, keepdims=True), latency=LAT, allow_tma=TMA)

@cutile.entry
def halves(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
           BN: Const[int], TMA: Const[bool], LAT: Const[int]):
    t = load_tile_like(x, z)
    s = t.sum(axis=1, keepdims=True)
    p = z.partition_mut((BM, BN // 2))
    for j in range(2):
        p.store(extract(t, (0, j), (BM, BN // 2)) / s, (0, j), latency=LAT, allow_tma=TMA)

@cutile.entry
def shifted(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
            BN: Const[int], TMA: Const[bool], LAT: Const[int]):
    t = load_tile_like(x, z)
    with cutile.unsafe():
        z.store_unchecked(t / t.sum(axis=1, keepdims=True),
                          ((block_id(0) + 1) % cdiv(z.shape[0], BM), 0), LAT, TMA)

@cutile.entry
def per_target(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
               BN: Const[int]):
    t = load_tile_like(x, z)
    z.store(t / t.sum(axis=1, keepdims=True), allow_tma=TMA_OFF_ON_SM90,
            latency=cutile.ByTarget(sm_90=2, sm_100=5))

@cutile.entry
def own_load(z: Mut[Tensor[f32, ["BM", "BN"]]], BM: Const[int], BN: Const[int]):
    z.store(z.load(latency=4, allow_tma=False) * 2.0)
"""

TMA_OFF_ON_SM90 = "TMA_OFF_ON_SM90 = cutile.ByTarget(sm_90=False, default=True)\n"


def kernels(tmp_path: object, name: str) -> Any:
    return load_kernel(tmp_path, TMA_OFF_ON_SM90 + KERNELS, name)


def hints_of(kernel: Any, op: str, **consts: object) -> list[object]:
    fn = kernel.lowered(kernel.specialization(consts)).module.functions[0]
    return [o.attrs.get("optimization_hints") for o in fn.walk() if o.name == op]


def sass_of(cubin: bytes) -> str:
    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text


@pytest.mark.parametrize("name", ["rows", "halves", "shifted"])
def test_every_kind_of_store_carries_its_hints(tmp_path: object, name: str) -> None:
    k = kernels(tmp_path, name)
    for tma, lat in ((False, 3), (True, 7)):
        got = hints_of(k, "store_view_tko", BM=8, BN=256, TMA=tma, LAT=lat)
        assert got and all(h == {"default": {"latency": lat, "allow_tma": tma}} for h in got)


def test_per_target_store_hints_keep_each_architectures_values(tmp_path: object) -> None:
    assert hints_of(kernels(tmp_path, "per_target"), "store_view_tko", BM=8, BN=256) == [
        {"default": {"allow_tma": True}, "sm_100": {"latency": 5},
         "sm_90": {"allow_tma": False, "latency": 2}}]


def test_a_load_of_the_own_tile_keeps_its_hints(tmp_path: object) -> None:
    assert hints_of(kernels(tmp_path, "own_load"), "load_view_tko", BM=8, BN=64) == [
        {"default": {"latency": 4, "allow_tma": False}}]


def test_store_hints_are_part_of_the_kernels_identity(tmp_path: object) -> None:
    k = kernels(tmp_path, "rows")
    a, b = (k.specialization({"BM": 8, "BN": 256, "TMA": t, "LAT": 3}) for t in (True, False))
    assert k.identity(a) != k.identity(b)


def run(kernel: Any, xs: np.ndarray, bm: int, bn: int, **consts: object) -> np.ndarray:
    z = api.full(list(xs.shape), np.nan, f32).partition([bm, bn])
    z, _ = kernel(z, api.from_numpy(xs), **consts).sync()
    return z.unpartition().to_numpy()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["rows", "halves", "shifted"])
def test_hinted_stores_write_exactly_what_unhinted_ones_do(tmp_path: object, name: str
                                                           ) -> None:
    # 37 rows of 100: a ragged last block, and for `halves` a second sub-tile wholly past
    # the end of every row (it writes nothing).
    xs = rng.uniform(0.5, 2.0, (37, 100)).astype(np.float32)
    k = kernels(tmp_path, name)
    outs = [run(k, xs, 8, 256, TMA=tma, LAT=lat) for tma, lat in
            ((True, 1), (False, 1), (False, 10), (True, 6))]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    x = xs.astype(np.float64)
    want = x / x.sum(axis=1, keepdims=True)
    if name == "shifted":
        want = shifted_down(want, 8)
    np.testing.assert_allclose(outs[0], want, rtol=1e-5)


def shifted_down(rows: np.ndarray, bm: int) -> np.ndarray:
    """What `shifted` writes: block i's tile of rows into tile i + 1, the last block's into
    tile 0 (its padding rows, 0 / 0, as NaN; the ragged last tile keeps only its rows)."""
    m = len(rows)
    tiles = [rows[i:i + bm] for i in range(0, m, bm)]
    tiles[-1] = np.concatenate([tiles[-1], np.full((bm - len(tiles[-1]), rows.shape[1]),
                                                   np.nan)])
    return np.concatenate([tiles[-1], *tiles[:-1]])[:m]
    np.testing.assert_allclose(outs[0], want, rtol=1e-5)


@pytest.mark.tileiras
@pytest.mark.parametrize("name", ["rows", "halves", "shifted"])
def test_allow_tma_false_stores_from_registers_on_sm90(tmp_path: object, name: str) -> None:
    k = kernels(tmp_path, name)
    for tma in (True, False):
        text = sass_of(k.compile("sm_90", BM=8, BN=1024, TMA=tma, LAT=3).cubin)
        assert ("UTMASTG" in text) == tma, f"{name}: allow_tma={tma}"
        if not tma:
            assert re.search(r"\bSTG\.E\.128\b", text), f"{name}: no 128-bit direct store"


@pytest.mark.tileiras
def test_tileiras_takes_the_store_hints_of_its_target(tmp_path: object) -> None:
    from cutile.backend.tileiras import find_tileiras

    k = kernels(tmp_path, "per_target")
    built = k.compile("sm_90", BM=8, BN=1024)
    if not find_tileiras().disassembler.exists():
        pytest.skip("tileirdisasm is not installed next to tileiras")
    stores = [line for line in built.ir_text().splitlines() if "store_view_tko" in line]
    assert len(stores) == 1 and "sm_90 = {allow_tma = false, latency = 2}" in stores[0]
    for target, tma in (("sm_90", False), ("sm_100", True)):
        text = sass_of(k.compile(target, BM=8, BN=1024).cubin)
        assert ("UTMASTG" in text) == tma, f"{target}: allow_tma={tma}"


@pytest.mark.parametrize(("store", "message", "points_at"), [
    ("z.store(t, latency=0)", "`latency` must be a compile-time integer from 1 to 10", "0"),
    ("z.store(t, allow_tma=cutile.ByTarget(sm_90=2))", "`allow_tma` for sm_90 must be True "
     "or False", "2"),
    ("z.partition_mut((64,)).store(t, (0,), latency=11)", "from 1 to 10", "11"),
    ("z.store_unchecked(t, (0,), allow_tma='no')", "`allow_tma` must be True or False",
     "'no'"),
])
def test_a_bad_store_hint_is_ct3060_at_its_value(tmp_path: object, store: str, message: str,
                                                 points_at: str) -> None:
    k = load_kernel(tmp_path, f"""
@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    with cutile.unsafe():
        {store}
""")
    with pytest.raises(KernelCheckError) as info:
        k.check()
        k.lowered(k.specialization({}))
    err = info.value
    assert err.codes == ["CT3060"] and message in err.message
    label = err.diagnostics[0].primary
    with open(label.file) as f:
        line = f.read().splitlines()[label.line - 1]
    assert line[label.col:label.end_col] == points_at


def test_a_store_hint_under_another_name_is_ct3039(tmp_path: object) -> None:
    k = load_kernel(tmp_path, """
@cutile.entry
def k(z: Mut[Tensor[f32, [64]]]):
    z.store(z.load(), tma=False)
""")
    with pytest.raises(KernelCheckError) as info:
        k.check()
    assert info.value.codes == ["CT3039"]
    assert "store(tile, index=None, latency=None, allow_tma=None)" in str(info.value)
