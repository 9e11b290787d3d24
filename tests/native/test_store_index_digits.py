"""Store indices built with `//` and `%` (the head permutation of "Fearless Concurrency on
the GPU" §3) through the real frontend and `_native.check_kernel`: the correct kernel is
accepted with launch predicates the host can evaluate, and the racy one is rejected with a
pair of blocks that really store the same tile."""

from __future__ import annotations

import re

import pytest

import cutile
from cutile import _native
from cutile.core import Const, Mut, Tensor, block_id, f32

pytest.importorskip("cutile.frontend.to_kast")


@cutile.entry
def permute_heads(
    dst: Mut[Tensor[f32, [1, "BM", "D"]]],
    src: Tensor[f32, [-1, -1, "D"]],
    H: Const[int],
    BM: Const[int],
    D: Const[int],
):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + h, m, 0))


@cutile.entry
def permute_heads_racy(
    dst: Mut[Tensor[f32, [1, "BM", "D"]]],
    src: Tensor[f32, [-1, -1, "D"]],
    H: Const[int],
    BM: Const[int],
    D: Const[int],
):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + m, h, 0))


def check(kernel) -> _native.CheckResult:
    return _native.check_kernel(str(kernel.kast_json()))


def holds(predicate: str, values: dict[str, int]) -> bool:
    """The host's reading of a launch predicate: undecidable (division by zero) refuses."""
    try:
        return _native.eval_predicate(predicate, values)
    except ValueError:
        return False


def launch_values(grid: tuple[int, int, int], h: int, src_rows: int) -> dict[str, int]:
    return {
        "grid(0)": grid[0],
        "grid(1)": grid[1],
        "grid(2)": grid[2],
        "H": h,
        "BM": 32,
        "D": 64,
        "dim(src, 0)": src_rows,
        "dim(src, 1)": grid[1] * 32,
    }


def test_correct_head_permutation_is_accepted_with_launch_predicates() -> None:
    result = check(permute_heads)
    assert result.ok, result.rendered()
    by_kind = {(o.kind, o.predicate) for o in result.obligations}
    assert ("store-index-injective", "grid(2) <= 1 && 1 <= H") in by_kind
    assert ("bounds", "1 <= H && H * cdiv(grid(0), H) <= dim(src, 0)") in by_kind
    assert all(o.discharged in {"static", "launch"} for o in result.obligations)
    launch = [o.predicate for o in result.obligations if o.discharged == "launch"]
    # B = 2, H = 8 on a (B*H, M/BM, 1) grid: every predicate holds.
    ok = launch_values((16, 16, 1), 8, 16)
    assert all(holds(p, ok) for p in launch)
    # A partition with two tiles on the D axis, H = 0, or a source with too few rows is
    # refused at launch.
    for bad in (
        launch_values((16, 16, 2), 8, 16),
        launch_values((16, 16, 1), 0, 16),
        launch_values((16, 16, 1), 8, 15),
    ):
        assert not all(holds(p, bad) for p in launch)


def test_racy_head_permutation_is_rejected_with_a_real_pair() -> None:
    result = check(permute_heads_racy)
    [d] = result.diagnostics
    assert d.code == "CT2001"
    m = re.fullmatch(
        r"with H = (\d+) and grid \((\d+), (\d+), (\d+)\): blocks \((\d+), (\d+), (\d+)\) "
        r"and \((\d+), (\d+), (\d+)\) both store to tile \((\d+), (\d+), (\d+)\) of `dst`",
        d.message,
    )
    assert m, d.message
    v = [int(x) for x in m.groups()]
    h, grid, a, b, tile = v[0], v[1:4], v[4:7], v[7:10], v[10:13]

    def index(block: list[int]) -> list[int]:
        bh, mm, _ = block
        return [bh // h * h + mm, bh % h, 0]

    assert h >= 1 and a != b
    assert all(0 <= x < g for blk in (a, b) for x, g in zip(blk, grid, strict=True))
    assert index(a) == index(b) == tile
    assert all(0 <= t < g for t, g in zip(tile, grid, strict=True))


def test_launch_predicates_name_only_launch_known_atoms() -> None:
    for o in check(permute_heads).obligations:
        if o.discharged == "launch":
            for atom in _native.predicate_atoms(o.predicate):
                assert not atom.startswith(("block_id", "loop", "value")), (o.predicate, atom)
