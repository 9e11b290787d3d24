"""A persistent, grouped GEMM (`for idx in z.iter_indices(group=G)`) that reads its tile
coordinates as `idx[0]`, `idx[1]`: the checker knows each component's range (the tile
counts of `z`), so the input bounds are launch predicates, not device checks in the inner
loop (which would cost the GPU its pipelining). Checked against numpy on ragged shapes."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f16, f32, mma, num_tiles, zeros

rng = np.random.default_rng(5)


@cutile.entry
def pgemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]], y: Tensor[f16, [-1, -1]],
          BM: Const[int], BN: Const[int], BK: Const[int], G: Const[int]):
    for idx in z.iter_indices(group=G):
        acc = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            a = x.load_tile((BM, BK), (idx[0], k))
            b = y.load_tile((BK, BN), (k, idx[-1]))
            acc = mma(a, b, acc)
        z.store(acc, index=idx)


def test_minted_components_need_no_device_checks() -> None:
    report = pgemm.check_report()
    assert not [o for o in report if o.discharged == "device"], report
    texts = [o.predicate for o in report if o.discharged == "launch"]
    assert "tiles(z, 0) <= cdiv(dim(x, 0), BM)" in texts
    assert "tiles(z, 1) <= cdiv(dim(y, 1), BN)" in texts


@pytest.mark.parametrize(("m", "n", "k", "blocks"), [(200, 136, 96, 3), (64, 64, 32, 1),
                                                     (97, 250, 40, 7)])
def test_persistent_gemm_against_numpy(m: int, n: int, k: int, blocks: int) -> None:
    x = rng.standard_normal((m, k)).astype(np.float16)
    y = rng.standard_normal((k, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f32).partition([32, 64]).persistent(blocks)
    z, _, _ = pgemm(z, api.from_numpy(x), api.from_numpy(y), BK=16, G=2).sync()
    want = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-3, atol=1e-3)


def test_an_input_too_small_for_the_output_is_refused_at_launch() -> None:
    x = rng.standard_normal((64, 32)).astype(np.float16)   # 64 rows, z has 96
    y = rng.standard_normal((32, 64)).astype(np.float16)
    z = api.zeros([96, 64], f32).partition([32, 64]).persistent(2)
    with pytest.raises(cutile.LaunchError) as info:
        pgemm(z, api.from_numpy(x), api.from_numpy(y), BK=16, G=1)
    assert info.value.code == "CT6200" and "tiles(z, 0) <= cdiv(dim(x, 0), BM)" in str(
        info.value)


@pytest.mark.tileiras
def test_persistent_gemm_assembles_for_sm90() -> None:
    assert pgemm.compile("sm_90", BM=128, BN=128, BK=64, G=8).cubin[:4] == b"\x7fELF"
