"""`@cutile.entry(fp_contract=True)`: a float product that only an add or a subtract uses is
fused into it, one `fma` rounded once (lowering/contract.py); a product used twice stays a
multiply; off by default, part of the kernel's identity, and a bad value is refused at the
decorator. On sm_90 the fused ops are FFMAs where tileiras otherwise keeps an FMUL and an
FADD apart."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import ConfigError


@cutile.entry
def fused(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
          w: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, z)
    b = load_tile_like(y, z)
    c = load_tile_like(w, z)
    z.store(a * b + c)


@cutile.entry
def mixed(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
          w: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, z)
    b = load_tile_like(y, z)
    c = load_tile_like(w, z)
    p = a * b                                  # used twice: stays a multiply
    z.store((p + c) * (c - a * c) + p)


def ops_of(kernel: Any, contract: bool) -> Counter[str]:
    k = kernel.with_hints(fp_contract=contract)
    lowered = k.lowered(k.specialization({"B": 256}))
    return Counter(op.name for op in lowered.module.functions[0].walk())


def test_a_product_fuses_into_the_add_that_uses_it() -> None:
    plain, contracted = ops_of(fused, False), ops_of(fused, True)
    assert (plain["mulf"], plain["addf"], plain["fma"]) == (1, 1, 0)
    assert (contracted["mulf"], contracted["addf"], contracted["fma"]) == (0, 0, 1)


def test_a_product_used_twice_stays_and_subtracts_fuse_with_a_negation() -> None:
    got = ops_of(mixed, True)
    # p = a*b stays (two uses); c - a*c = fma(-a, c, c); (p + c) * (...) + p = fma(.., .., p)
    assert {n: got[n] for n in ("mulf", "addf", "subf", "negf", "fma")} == {
        "mulf": 1, "addf": 1, "subf": 0, "negf": 1, "fma": 2}
    assert ops_of(mixed, False)["fma"] == 0


def run(kernel: Any, xs: np.ndarray, ys: np.ndarray, ws: np.ndarray) -> np.ndarray:
    z = api.empty([xs.size], f32).partition([256])
    z, *_ = kernel(z, api.from_numpy(xs), api.from_numpy(ys), api.from_numpy(ws)).sync()
    return np.asarray(z.unpartition().to_numpy())


def test_the_fused_result_is_rounded_once() -> None:
    """Against a reference with 64 significant bits: the fused result is within half an
    ulp (one rounding) everywhere; the product and the sum rounded apart are not."""
    rng = np.random.default_rng(7)
    n = 4096 + 37                                    # a ragged last tile
    xs, ys = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    ws = (-xs.astype(np.float64) * ys + rng.standard_normal(n) * 1e-3).astype(np.float32)
    exact = (xs.astype(np.longdouble) * ys.astype(np.longdouble) + ws.astype(np.longdouble))
    ulp = np.spacing(np.abs(exact).astype(np.float32))
    got = run(fused.with_hints(fp_contract=True), xs, ys, ws)
    err = np.abs(got.astype(np.longdouble) - exact) / ulp.astype(np.longdouble)
    assert float(err.max()) <= 0.5 + 1e-6
    apart = run(fused, xs, ys, ws)                   # near-cancelling sums: two roundings
    err_apart = np.abs(apart.astype(np.longdouble) - exact) / ulp.astype(np.longdouble)
    assert float(err_apart.max()) > 1.0
    assert np.array_equal(apart, (xs * ys + ws).astype(np.float32))


def test_fp_contract_is_part_of_the_identity_and_kept_by_with_hints() -> None:
    spec = fused.specialization({"B": 256})
    assert "fp_contract" not in fused.identity(spec)
    on = fused.with_hints(fp_contract=True)
    assert on.identity(spec)["fp_contract"] is True
    assert on.with_hints(occupancy=2).fp_contract is True
    assert on.with_hints(fp_contract=False).identity(spec) == fused.identity(spec)


def test_a_bad_value_is_refused_at_the_decorator() -> None:
    with pytest.raises(ConfigError) as err:
        cutile.entry(fp_contract="yes")  # type: ignore[call-overload]
    assert err.value.code == "CT8020" and "fp_contract" in str(err.value)


@pytest.mark.tileiras
def test_sm90_gets_an_ffma_in_place_of_an_fmul_and_an_fadd() -> None:
    from cutile.dump import sass

    def counts(contract: bool) -> Counter[str]:
        text = sass(fused.with_hints(fp_contract=contract).compile(target="sm_90",
                                                                   B=256).cubin)
        if text is None:
            pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
        return Counter(re.findall(r"\b(FFMA|FMUL|FADD)\b", text))

    plain, contracted = counts(False), counts(True)
    assert plain["FFMA"] == 0 and plain["FADD"] > 0
    assert contracted["FFMA"] == plain["FADD"] and contracted["FADD"] == 0
