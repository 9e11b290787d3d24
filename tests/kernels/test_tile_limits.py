"""Tile IR's limits on one tile (power-of-two extents, at most 2^24 elements) are typed
errors with the kernel's line and a caret, found while lowering: before any tileiras call,
whether the kernel is compiled ahead of time or launched."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api, pipeline
from cutile.core import Const, Mut, Tensor, f32, i8, zeros

LIMIT = 1 << 24  # maxTileNumElements in NVIDIA/cuda-tile (IR/Types.h)


@cutile.entry
def bump(z: Mut[Tensor[i8, ["B"]]], B: Const[int]):
    z.store(z.load() + 1)


@cutile.entry
def outer(z: Mut[Tensor[f32, [1, 1]]], M: Const[int], N: Const[int]):
    t = zeros((M, 1), f32) + zeros((1, N), f32)
    z.store(t.sum(axis=0, keepdims=True).sum(axis=1, keepdims=True))


@pytest.fixture
def no_assembler(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("tileiras was called")

    monkeypatch.setattr(pipeline, "assemble", refuse)


@pytest.mark.usefixtures("no_assembler")
def test_a_tile_past_2_24_elements_is_refused_at_its_line() -> None:
    with pytest.raises(cutile.KernelCheckError) as info:
        bump.compile(B=2 * LIMIT)
    err = info.value
    assert err.codes == ["CT3024"]
    text = str(err)
    assert "a tile of 33554432 elements is larger than Tile IR allows (at most 2^24 = " \
           "16777216)" in text
    assert "z.store(z.load() + 1)" in text and "^^^^^^^^" in text  # the load's tile
    assert "help: use smaller tiles" in text


@pytest.mark.usefixtures("no_assembler")
def test_a_broadcast_past_the_limit_is_named_at_its_expression() -> None:
    with pytest.raises(cutile.KernelCheckError) as info:
        outer.compile(M=4096, N=8192)
    text = str(info.value)
    assert info.value.codes == ["CT3024"] and "(4096x8192)" in text
    line = "    t = zeros((M, 1), f32) + zeros((1, N), f32)"
    caret = " " * 8 + "^" * (len(line) - 8)
    assert line in text and caret in text.replace(line, "")


@pytest.mark.usefixtures("no_assembler")
def test_the_limit_itself_and_non_powers_of_two() -> None:
    bump.lowered(bump.specialization({"B": LIMIT}))  # exactly 2^24 elements lowers
    outer.lowered(outer.specialization({"M": 4096, "N": 4096}))
    with pytest.raises(cutile.KernelCheckError) as info:
        bump.compile(B=48)
    assert info.value.codes == ["CT3023"]
    assert "tile dimension 48 is not a power of two" in str(info.value)


def test_a_launch_with_too_large_a_tile_raises_before_running_and_hands_back() -> None:
    z = api.zeros([16], i8).partition([2 * LIMIT])  # one ragged tile, larger than allowed
    with pytest.raises(cutile.KernelCheckError) as info:
        bump(z).sync()
    assert info.value.codes == ["CT3024"]
    np.testing.assert_array_equal(z.to_numpy(), np.zeros(16, np.int8))
