"""`@cutile.device` helpers on the active backend and through tileiras: nested helpers,
helpers called twice, helpers with loops and branches. Their ops carry Tile IR call-site
locations (the helper's line, called from the kernel's), which tileiras requires of
inlined code."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, exp, f32, load_tile_like, maximum

rng = np.random.default_rng(2026)


@cutile.device
def affine(t, scale, shift):
    return t * scale + shift


@cutile.device
def softplus(t):
    # nested: a helper that calls a helper
    return affine(exp(-maximum(t, -t)), 1.0, 1.0)


@cutile.device
def poly(t, n):
    acc = t
    for _ in range(n):
        acc = affine(acc, 0.5, 1.0)
    if n > 2:
        acc = acc - 1.0
    return acc


@cutile.entry
def helpers(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int], N: Const[int]):
    t = load_tile_like(x, z)
    z.store(affine(t, 2.0, -1.0) + softplus(t) + poly(t, N) + affine(t, -3.0, 0.5))


def reference(xs: np.ndarray, n: int) -> np.ndarray:
    x = xs.astype(np.float64)
    acc = x
    for _ in range(n):
        acc = acc * 0.5 + 1.0
    if n > 2:
        acc = acc - 1.0
    return (2 * x - 1) + (np.exp(-np.abs(x)) + 1.0) + acc + (-3 * x + 0.5)


@pytest.mark.parametrize(("n", "steps"), [(1000, 3), (4096, 1), (77, 0)])
def test_nested_helpers_called_twice(n: int, steps: int) -> None:
    xs = rng.standard_normal(n).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([256])
    z, _ = helpers(z, api.from_numpy(xs), N=steps).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), reference(xs, steps), rtol=2e-6,
                               atol=2e-6)


@pytest.mark.tileiras
@pytest.mark.parametrize("steps", [0, 3])
def test_helpers_assemble_for_sm90(steps: int) -> None:
    compiled = helpers.compile(target="sm_90", B=256, N=steps)
    assert compiled.cubin[:4] == b"\x7fELF"


def test_helper_ops_are_located_at_their_call_sites() -> None:
    from cutile.ir.core import Location

    lowered = helpers.lowered(helpers.specialization({"B": 256, "N": 3}))
    sites: set[tuple[str, str]] = set()
    for op in lowered.module.functions[0].walk():
        loc = op.loc
        if isinstance(loc, Location) and loc.inlined_at is not None:
            chain = [loc.function]
            while loc.inlined_at is not None:
                loc = loc.inlined_at
                chain.append(loc.function)
            assert chain[-1] == "helpers"     # every chain ends in the kernel
            sites.add((chain[0], chain[1]))
    assert {("affine", "helpers"), ("affine", "softplus"), ("affine", "poly"),
            ("softplus", "helpers")} <= sites
