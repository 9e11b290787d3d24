"""Interop with cupy and jax on the GPU: zero-copy import and export through DLPack (and
cupy through `__cuda_array_interface__`), and kernel calls on their arrays, checked
against their own arithmetic."""

from __future__ import annotations

import gc
import os
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

pytestmark = pytest.mark.gpu


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def _cupy() -> Any:
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("cupy sees no GPU")
    return cupy


def _jax() -> Any:
    # jax takes most of the GPU's memory at start unless told otherwise
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
    except RuntimeError:
        pytest.skip("jax has no GPU backend here")
    return jax


def test_cupy_in_cupy_out_without_a_copy() -> None:
    cupy = _cupy()
    rng = cupy.random.default_rng(5)
    x = rng.standard_normal(50_000, dtype=cupy.float32)
    y = rng.standard_normal(50_000, dtype=cupy.float32)
    z = cupy.full(50_000, cupy.nan, dtype=cupy.float32)
    zp = cutile.unsafe.from_dlpack_exclusive(z).partition([1024])
    assert zp.address == z.data.ptr
    zp, cx, _ = add(zp, x, y).sync()
    assert cx.address == x.data.ptr
    cupy.testing.assert_array_equal(z, x + y)


def test_a_cutile_tensor_goes_to_cupy_without_a_copy() -> None:
    cupy = _cupy()
    t = api.from_numpy(np.arange(4096, dtype=np.float32))
    a = cupy.from_dlpack(t)
    assert a.data.ptr == t.address
    cupy.testing.assert_array_equal(a, cupy.arange(4096, dtype=cupy.float32))
    with pytest.raises(cutile.BorrowError, match="CT5041"):
        t.partition([512])
    del a
    gc.collect()
    t.partition([512])
    # through `__cuda_array_interface__` (cupy.asarray reads it)
    u = api.from_numpy(np.arange(64, dtype=np.float32))
    b = cupy.asarray(u)
    assert b.data.ptr == u.address
    cupy.testing.assert_array_equal(b, cupy.arange(64, dtype=cupy.float32))


def test_jax_both_ways() -> None:
    jax = _jax()
    jnp = jax.numpy
    gpu = jax.devices("gpu")[0]
    jx = jax.device_put(jnp.arange(8192, dtype=jnp.float32), gpu)
    jy = jax.device_put(jnp.full(8192, 0.5, dtype=jnp.float32), gpu)
    t = cutile.from_dlpack(jx)
    assert t.address == jx.unsafe_buffer_pointer()  # no copy
    np.testing.assert_array_equal(t.to_numpy(), np.asarray(jx))
    z = api.full([8192], np.nan, f32).partition([1024])
    z, _, _ = add(z, jx, jy).sync()  # jax arrays straight into the kernel
    result = z.unpartition()
    np.testing.assert_array_equal(result.to_numpy(), np.asarray(jx + jy))
    back = jnp.from_dlpack(result)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(jx + jy))
    # jax decides itself whether it aliases an imported buffer: reported, not asserted
    shared = back.unsafe_buffer_pointer() == result.address
    print(f"jax imported the cutile tensor {'without' if shared else 'with'} a copy")
