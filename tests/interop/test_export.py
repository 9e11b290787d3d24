"""`Tensor.__dlpack__` / `__dlpack_device__` on host memory (the interpreter), with numpy
as the consumer: zero-copy both ways, the read-only flag, export pins, keep-alive, copies,
element type codes, and every refusal with its code."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.dtypes import ALL

from .producers import Capsule
from .test_import import values

rng = np.random.default_rng(11)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def _tensor(n: int = 32) -> tuple[api.Tensor, np.ndarray]:
    a = rng.standard_normal(n).astype(np.float32)
    return api.from_numpy(a), a


def test_numpy_views_a_cutile_tensor_and_writes_reach_it() -> None:
    t, a = _tensor()
    assert t.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(t)
    assert b.ctypes.data == t.address and b.flags.writeable
    np.testing.assert_array_equal(b, a)
    b[3] = 99.0  # written by numpy, read by cutile
    assert t.to_numpy()[3] == 99.0


def test_views_export_their_layout() -> None:
    base = rng.standard_normal((8, 6)).astype(np.float32)
    t = api.from_numpy(base)[1::2, 2:]
    b = np.from_dlpack(t)
    assert b.shape == (4, 4) and b.strides == (48, 4)
    assert b.ctypes.data == t.address
    np.testing.assert_array_equal(b, base[1::2, 2:])
    assert np.from_dlpack(api.zeros([0, 3], f32)).shape == (0, 3)


def test_a_shared_import_goes_out_read_only() -> None:
    a = rng.standard_normal(8).astype(np.float32)
    b = np.from_dlpack(cutile.from_dlpack(a))
    assert not b.flags.writeable
    assert b.ctypes.data == a.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        b[0] = 1.0
    # An own tensor goes out writable, and a legacy consumer (no `max_version`) gets the
    # `dltensor` capsule of the protocol before 1.0.
    t, _ = _tensor()
    assert np.from_dlpack(t).flags.writeable
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    assert np.from_dlpack(Capsule(legacy)).ctypes.data == t.address


def test_cutile_does_not_write_what_another_library_holds() -> None:
    t, _ = _tensor()
    b = np.from_dlpack(t)
    c = np.from_dlpack(t)
    with pytest.raises(cutile.BorrowError) as info:
        t.partition([8])
    assert info.value.code == "CT5041" and "2 live exports" in str(info.value)
    del b
    gc.collect()
    with pytest.raises(cutile.BorrowError, match="1 live export"):
        t.partition([8])
    del c
    gc.collect()  # numpy called the deleter: the export ended
    z = t.partition([8])
    assert z.num_tiles == 4
    # A capsule no consumer takes ends its export when it dies.
    u, _ = _tensor()
    cap = u.__dlpack__(max_version=(1, 0))
    with pytest.raises(cutile.BorrowError, match="CT5041"):
        u.partition([8])
    del cap
    u.partition([8])


def test_the_export_keeps_cutile_memory_alive() -> None:
    t, a = _tensor(4096)
    b = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(b, a)  # the capsule's owner holds the allocation
    b += 1.0
    np.testing.assert_array_equal(b, a + 1.0)


def test_a_copy_is_the_consumers_alone() -> None:
    t, a = _tensor()
    b = np.from_dlpack(t, copy=True)
    assert b.ctypes.data != t.address and b.flags.writeable
    b[:] = 0.0
    np.testing.assert_array_equal(t.to_numpy(), a)
    assert t.partition([8]).num_tiles == 4  # a copy pins nothing of `t`
    shared = cutile.from_dlpack(a)
    assert np.from_dlpack(shared, copy=True).flags.writeable  # a copy is writable


def test_requests_the_protocol_does_not_allow() -> None:
    t, _ = _tensor()
    for kwargs in [{"dl_device": (2, 0)}, {"dl_device": (2, 0), "copy": True},
                   {"stream": 7}, {"stream": "s"}, {"copy": "yes"}, {"dl_device": "cpu"},
                   {"max_version": 1}]:
        with pytest.raises(cutile.InteropError) as info:
            t.__dlpack__(**kwargs)
        assert info.value.code == "CT5045" and info.value.hint, kwargs
        assert isinstance(info.value, BufferError)  # what DLPack consumers catch
    assert np.from_dlpack(Capsule(t.__dlpack__(stream=-1, dl_device=(1, 0), copy=False)))[0] \
        == t.to_numpy()[0]
    assert not hasattr(t, "__cuda_array_interface__")  # host memory: no CUDA interface


def test_a_tensor_an_op_holds_is_not_exported() -> None:
    x, a = _tensor(256)
    y = api.ones([256], f32)
    z = api.zeros([256], f32).partition([128])
    op = add(z, x, y)
    with pytest.raises(cutile.BorrowError) as info:
        np.from_dlpack(x)
    assert info.value.code == "CT5001" and "`add`" in str(info.value)
    z, x, y = op.sync()
    out = np.from_dlpack(z.unpartition())  # the result, zero-copy, once handed back
    np.testing.assert_array_equal(out, a + 1.0)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_element_type_leaves_with_its_dlpack_code(name: str) -> None:
    dtype = ALL[name]
    src = values(dtype.numpy, 16)
    t = api.empty([16], dtype)  # (from_numpy would read float32 data as f32, not tf32)
    t._alloc.write(0, src.view(np.uint8))
    taken = _native.dlpack_take(t.__dlpack__(max_version=(1, 0)))
    expected = {"i1": (6, 8), "bf16": (4, 16), "f8e4m3fn": (10, 8), "f8e5m2": (12, 8),
                "tf32": (2, 32), "f16": (2, 16), "f32": (2, 32), "f64": (2, 64)}
    code_bits = expected.get(name) or ((1 if dtype.unsigned else 0), dtype.bits)
    assert taken.dtype == (*code_bits, 1)
    assert taken.version == (1, 1) and taken.data == t.address
    # ... and comes back the same type (tf32 as f32: DLPack has no tf32), bit for bit.
    back = cutile.from_dlpack(Capsule(t.__dlpack__(max_version=(1, 0))))
    assert back.dtype.name == ("f32" if name == "tf32" else name)
    assert back.to_numpy().tobytes() == src.tobytes()


def test_cutile_to_cutile_through_a_capsule_is_zero_copy() -> None:
    t, a = _tensor()
    back = cutile.from_dlpack(Capsule(t.__dlpack__(max_version=(1, 0))))
    assert back.address == t.address
    np.testing.assert_array_equal(back.to_numpy(), a)
    # `back` is a foreign view of `t`'s memory (the capsule pins `t`): read-only.
    with pytest.raises(cutile.BorrowError, match="CT5040"):
        back.partition([8])
    with pytest.raises(cutile.BorrowError, match="CT5041"):
        t.partition([8])
