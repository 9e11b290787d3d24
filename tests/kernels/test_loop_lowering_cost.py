"""How often the lowering lowers a loop body. The carried names' templates of a loop are
settled by scratch passes of its body, and each pass lowered the loops inside it again
(their scratch passes included): 13 nested loops took ~6 s to lower, the innermost body
lowered 2^14 times. A loop entered again in the same state now takes the plan it settled
(`ControlFlow.run_loop`), and inside a scratch pass its body is not lowered at all.

The kernels with such plans reused run against numpy: a carried value that changes type
(so the loops around settle in two passes, and an inner loop is planned in two states)
and a device function whose loop sets its return value (planned with `$retval`
defined before the loop)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import Mut, Tensor, f32, i32, load_tile_like
from cutile.frontend import kast as K
from cutile.lowering.lower import Lowerer

rng = np.random.default_rng(2031)


def nested_loops(depth: int, statement: str = "j += 1") -> str:
    """`depth` nested loops around one statement (13 is as deep as the checker follows
    such a kernel, CT1019 past it)."""
    src = ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):\n"
           "    j = block_id(0)\n    t = load_tile_like(x, z)\n")
    for d in range(depth):
        src += "    " * (d + 1) + f"for l{d} in range(3):\n"
    src += "    " * (depth + 1) + statement + "\n"
    return src + "    z.store(t)\n"


def test_the_innermost_of_nested_loops_is_lowered_a_bounded_number_of_times(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each loop is lowered for its scratch passes and once more for good; the loops
    inside a scratch pass reuse their plans. Before: 2^depth lowerings of the
    innermost `j += 1` (8,192 at depth 13); now 3 for each loop around it at most."""
    depth = 13
    k = load_kernel(tmp_path, nested_loops(depth))
    k.check()
    seen: list[int] = []
    lower_stmt = Lowerer.lower_stmt

    def counting(self: Lowerer, s: K.Stmt) -> None:
        if isinstance(s, K.AugAssign):
            seen.append(s.nid)
        lower_stmt(self, s)

    monkeypatch.setattr(Lowerer, "lower_stmt", counting)
    k.lowered(k.specialization({}))
    assert 0 < len(seen) <= 3 * depth, len(seen)


def test_thirteen_nested_loops_lower_in_a_few_seconds(tmp_path: Any) -> None:
    """Around one statement of 24 tile ops: before, 17 s on a loaded 2-core machine
    (0.4 s now); the bound leaves room for a slow CI machine."""
    terms = " + ".join(f"t * {n + 1}.5" for n in range(12))
    k = load_kernel(tmp_path, nested_loops(13, f"t = {terms}"))
    k.check()
    start = time.perf_counter()
    k.lowered(k.specialization({}))
    assert time.perf_counter() - start < 4.0


@cutile.device
def bumped_until(t, n):
    """`t + r` at the first `r < n` where the tile's sum passes 40, else `t + n`; the
    return value is first set inside the loop."""
    for r in range(n):
        if (t + r).sum() > 40.0:
            return t + r
    return t + n


@cutile.entry
def widening(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, m: i32):
    acc = 0  # a number, then a tile: the outer loop settles it in two passes, and the
    for i in range(3):  # loops inside it are planned with `acc` of each type
        u = load_tile_like(x, z) * (i + 1)
        for j in range(n):
            c = 0.0
            for _q in range(m):
                c = c + 1.0
            u = u + bumped_until(u * 0.5, j) * 0.25 + acc * 0.125 + c
        acc = acc + u
    z.store(acc)


def widening_model(xs: np.ndarray, n: int, m: int) -> np.ndarray:
    out = np.zeros(len(xs), np.float64)
    for b in range(0, len(xs), 16):
        acc = np.zeros(16, np.float64)
        for i in range(3):
            u = xs[b:b + 16].astype(np.float64) * (i + 1)
            for j in range(n):
                v = u * 0.5
                r = next((r for r in range(j) if (v + r).sum() > 40.0), j)
                u = u + (v + r) * 0.25 + acc * 0.125 + m
            acc = acc + u
        out[b:b + 16] = acc
    return out


@pytest.mark.parametrize(("n", "m"), [(0, 2), (1, 0), (4, 3)])
def test_loops_whose_plans_are_reused_compute_the_model(n: int, m: int) -> None:
    xs = rng.uniform(0.25, 1.0, 64).astype(np.float32)
    z = api.zeros([64], f32).partition([16])
    z, _, _, _ = widening(z, api.from_numpy(xs), n, m).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), widening_model(xs, n, m),
                               rtol=1e-4)


def test_lowering_without_dumps_does_not_encode_the_kernel_ast(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The AST's JSON (1.4 s for a 12,000-line kernel) was encoded at every lowering for
    a dump that was not asked for; the checker's and the hash's encodings remain."""
    monkeypatch.delenv("CUTILE_DUMP", raising=False)
    k = load_kernel(tmp_path, nested_loops(2))
    spec = k.specialization({})
    k.check()
    k.identity(spec)
    encoded: list[int] = []
    to_json = K.Document.to_json

    def counting(self: K.Document) -> str:
        encoded.append(1)
        return to_json(self)

    monkeypatch.setattr(K.Document, "to_json", counting)
    k.lowered(spec)
    assert encoded == []
