"""Adversarial probes of the race detector through real kernels: the host's layouts and the
lowering of gather and scatter are part of what the oracle sees (the hand-built IR probes
are tests/interpreter/test_race_detector_adversarial.py)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, arange, block_id, f32, gather, i32, scatter


@pytest.fixture(autouse=True)
def _interpreted(interpreter: None) -> None:
    """Every test here runs on the interpreter (the `interpreter` fixture, conftest.py)."""


@cutile.entry
def gather_all(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1, -1]], B: Const[int]):
    lane = arange(B, i32)
    z.store(gather(x, (lane // 4, lane % 4)))


def test_a_checked_gather_from_an_interleaved_import_is_clean() -> None:
    # x is a zero-copy (2, 3) import with strides (3, 2): elements at 0 2 4 / 3 5 7 of the
    # buffer. The checker accepts the kernel (gather masks every lane to x's bounds), so the
    # oracle must run it clean: x[0, 2] sits at slot 4, which is not 1 * 3 + k * 2.
    base = np.arange(16, dtype=np.float32)
    xs = as_strided(base, (2, 3), (12, 8))
    gather_all.check()
    with cutile.check_races():
        z, _ = gather_all(api.zeros([8], f32).partition([8]), api.from_dlpack(xs), B=8).sync()
    want = np.array([0, 2, 4, 0, 3, 5, 7, 0], np.float32)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


@cutile.entry
def scatter_shifted(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]], S: Const[int]):
    with cutile.unsafe():  # the checker proves nothing here: the detector is the test
        scatter(z, block_id(0) * S + arange(8, i32), x.load_tile((8,), (block_id(0),)))


@pytest.mark.parametrize(("step", "racy"), [(8, False), (7, True)])
def test_scatters_of_neighbouring_blocks_that_overlap(step: int, racy: bool) -> None:
    def args() -> tuple[object, object]:
        return api.zeros([16], f32).partition([8]), api.from_numpy(np.arange(16, dtype=np.float32))

    z, x = args()
    with cutile.check_races():
        if racy:
            with pytest.raises(cutile.RaceError) as info:
                scatter_shifted(z, x, S=step).sync()
            assert (info.value.kind, info.value.tensor, info.value.element) == (
                "write-write", "z", (7,))
        else:
            scatter_shifted(z, x, S=step).sync()
