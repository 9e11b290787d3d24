"""examples/attention.py in its two grid orders: one head's query tiles on the grid's x axis
(the output as a permuted (S, B*H, D) view, the default) and the heads on x. Both compute
softmax(Q K^T / sqrt(d)) V against a float64 reference, causal or not, with query and key
tiles of equal and unequal sizes and a ragged last tile, and the checker proves every tile
index in bounds without a device check (a device assert in the key loop doubled the
kernel's SASS on sm_90 and made it spill)."""

from __future__ import annotations

import pytest
from kernel_source import load_example

ex = load_example("attention", "example_attention_orders")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("queries_on_x", [True, False])
@pytest.mark.parametrize("tiles", [(32, 32), (32, 16), (16, 32)])
def test_both_grid_orders_match_the_reference(causal: bool, queries_on_x: bool,
                                              tiles: tuple[int, int]) -> None:
    kernel = ex.make_attention(causal, queries_on_x)
    err = ex.run(2, 72, 16, causal, tiles, kernel=kernel, queries_on_x=queries_on_x)
    assert err < 3e-2


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("queries_on_x", [True, False])
def test_no_tile_index_needs_a_device_check(causal: bool, queries_on_x: bool) -> None:
    report = ex.make_attention(causal, queries_on_x).check_report()
    assert report and all(o.discharged in ("static", "launch") for o in report), report


def test_queries_run_along_the_grid_x_axis() -> None:
    o = ex.output(3, 200, 16, 64)
    assert o.grid == (4, 3, 1) and o.tile_shape == (64, 1, 16)
    assert ex.output(3, 200, 16, 64, queries_on_x=False).grid == (3, 4, 1)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("tiles", [(32, 32), (32, 16), (16, 32)])
def test_even_key_kernels_match_the_reference(causal: bool, tiles: tuple[int, int]) -> None:
    seq = 64  # a multiple of every BN here: kernel_for picks the even_keys variant
    assert ex.kernel_for(causal, seq, tiles[1]) in (ex.attention_even, ex.attention_causal_even)
    err = ex.run(2, seq, 16, causal, tiles)
    assert err < 3e-2


def test_a_ragged_key_count_gets_the_masked_kernel() -> None:
    assert ex.kernel_for(False, 72, 32) is ex.attention
    assert ex.kernel_for(True, 72, 32) is ex.attention_causal
    assert ex.kernel_for(False, 64, 32) is ex.attention_even


@pytest.mark.parametrize("causal", [False, True])
def test_even_key_kernels_need_no_device_check(causal: bool) -> None:
    report = ex.make_attention(causal, even_keys=True).check_report()
    assert report and all(o.discharged in ("static", "launch") for o in report), report


def test_even_keys_drop_the_masked_loop_of_non_causal_attention() -> None:
    """Half the loops for tileiras to compile: the compile-time row of issue 8."""
    consts = {"BM": 32, "BN": 32, "D": 16}

    def loops(kernel: object) -> int:
        fn = kernel.compile(target="sm_90", **consts).module.functions[0]  # type: ignore[attr-defined]
        return sum(1 for op in fn.walk() if op.name == "for")

    assert loops(ex.attention) == 2 * loops(ex.attention_even) > 0
