"""Interop with torch on the GPU: zero-copy both ways (pointers compared), stream order
across the hand-over (a torch stream held back by a GPU sleep), keep-alive, every element
type bit for bit, kernel calls on torch tensors, `__cuda_array_interface__`, and each
refusal with its code."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, f32, load_tile_like

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

# ~0.1 s of GPU time on the stream it is queued on: long enough that work queued behind it
# has not run when the host moves on, so a missing stream handshake shows as wrong values.
SLEEP_CYCLES = 200_000_000


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def scale2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], a: f32,
            BM: Const[int], BN: Const[int]):
    z.store(load_tile_like(x, z) * a)


@cutile.entry
def widen(z: Mut[Tensor[f32, ["B"]]], x: Tensor[bf16, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z).astype(f32))


@pytest.fixture(autouse=True)
def _cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")


def test_torch_in_torch_out_without_a_copy() -> None:
    n = 100_003
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    z = torch.full((n,), float("nan"), device="cuda")
    zp = cutile.unsafe.from_dlpack_exclusive(z).partition([1024])
    assert zp.address == z.data_ptr()
    zp, cx, cy = add(zp, x, y).sync()  # torch inputs imported shared by the call
    assert (cx.address, cy.address) == (x.data_ptr(), y.data_ptr())
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)


def test_strided_torch_inputs_and_outputs() -> None:
    x = torch.randn(300, 200, device="cuda")[::2, 8:].T  # (192, 150), strides (1, 400)
    z = torch.zeros(150, 192, device="cuda").T  # a column-major output
    zp = cutile.unsafe.from_dlpack_exclusive(z).partition([32, 64])
    scale2d(zp, x, 2.5).sync()
    torch.testing.assert_close(z, x * 2.5, rtol=0, atol=0)


def test_a_cutile_tensor_goes_to_torch_without_a_copy() -> None:
    t = api.from_numpy(np.arange(1000, dtype=np.float32))
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.address and tt.is_cuda
    tt.mul_(2.0)  # torch writes cutile's memory
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.to_numpy(), np.arange(1000, dtype=np.float32) * 2)
    with pytest.raises(cutile.BorrowError, match="CT5041"):
        t.partition([100])  # torch still holds it
    del tt
    gc.collect()
    assert t.partition([100]).num_tiles == 10


def test_the_import_waits_for_torch_work_still_queued() -> None:
    n = 1 << 20
    x = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(3.0)  # still queued behind the sleep when cutile imports x
        cx = cutile.from_dlpack(x)  # torch makes cutile's stream wait for `side`
    z = api.zeros([n], f32).partition([1024])
    z, cx, _ = add(z, cx, cx).sync()
    assert bool((z.unpartition().to_numpy() == 6.0).all())


def test_the_export_makes_torch_wait_for_cutile_work_still_queued() -> None:
    gate = torch.zeros(1, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        held = cutile.from_dlpack(gate)  # cutile's stream now waits behind the sleep
    t = api.full([1 << 20], 5.0, f32)  # its fill is queued on cutile's (waiting) stream
    got = torch.from_dlpack(t).clone()  # torch's stream must wait for that fill
    torch.cuda.synchronize()
    assert bool((got == 5.0).all())
    del held


def test_the_import_keeps_the_torch_tensor_alive() -> None:
    x = torch.randn(1 << 16, device="cuda")
    expected = x.cpu().numpy()
    alive = weakref.ref(x)
    t = cutile.from_dlpack(x)
    del x
    gc.collect()
    torch.cuda.empty_cache()
    junk = torch.randn(1 << 16, device="cuda")  # would reuse freed memory
    assert alive() is not None
    np.testing.assert_array_equal(t.to_numpy(), expected)
    del t, junk
    gc.collect()
    assert alive() is None  # the DLPack deleter ran


def _random(dtype: Any, n: int = 256) -> Any:
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), device="cuda").bool()
    size = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (n * size,), dtype=torch.uint8, device="cuda")
    return raw.view(dtype)


TORCH_TYPES = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
    "bf16": "bfloat16", "f32": "float32", "f64": "float64", "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
}


@pytest.mark.parametrize("name", sorted(TORCH_TYPES))
def test_every_element_type_round_trips_bit_exact(name: str) -> None:
    dtype = getattr(torch, TORCH_TYPES[name], None)
    if dtype is None:
        pytest.skip(f"torch {torch.__version__} has no {TORCH_TYPES[name]}")
    src = _random(dtype)
    try:
        t = cutile.from_dlpack(src)
    except cutile.InteropError as err:  # torch's DLPack has no code for it
        assert err.code == "CT5042", err
        pytest.skip(f"torch {torch.__version__} does not export {dtype} through DLPack: {err}")
    assert t.dtype.name == name and t.address == src.data_ptr()
    try:
        back = torch.from_dlpack(t)
    except (BufferError, RuntimeError) as err:
        if name in ("i1", "i8", "i16", "i32", "i64", "u8", "f16", "bf16", "f32", "f64"):
            raise  # types torch has always exchanged: a failure is cutile's
        pytest.skip(f"torch {torch.__version__} does not import {dtype} from DLPack: {err}")
    assert back.dtype == dtype and back.data_ptr() == src.data_ptr()
    assert torch.equal(back.view(torch.uint8), src.view(torch.uint8))


def test_a_bf16_torch_input_in_a_kernel() -> None:
    x = torch.randn(4096, device="cuda").to(torch.bfloat16)
    z = api.zeros([4096], f32).partition([512])
    z, _ = widen(z, x).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), x.float().cpu().numpy())


def test_devices_the_gpu_backend_cannot_read() -> None:
    with pytest.raises(cutile.InteropError) as info:
        cutile.from_dlpack(np.ones(4, np.float32))
    assert info.value.code == "CT5043" and "api.from_numpy" in str(info.value.hint)
    with pytest.raises(cutile.InteropError, match="CT5043"):
        cutile.from_dlpack(torch.ones(4))  # a CPU tensor
    with pytest.raises(cutile.InteropError, match="CT5043"):
        add(api.zeros([256], f32).partition([128]), torch.ones(256), torch.ones(256))
    if torch.cuda.device_count() > 1:
        with pytest.raises(cutile.InteropError, match="device 1"):
            cutile.from_dlpack(torch.ones(4, device="cuda:1"))


def test_torch_misuse() -> None:
    with pytest.raises(cutile.InteropError, match="CT5042"):
        cutile.from_dlpack(torch.ones(4, device="cuda", requires_grad=True))
    z = torch.zeros(256, device="cuda")
    with pytest.raises(cutile.LaunchError, match="CT6112"):
        add(z, torch.ones(256, device="cuda"), torch.ones(256, device="cuda"))
    e = cutile.unsafe.from_dlpack_exclusive(z)
    with pytest.raises(cutile.InteropError, match="CT5047"):
        cutile.unsafe.from_dlpack_exclusive(z[128:])
    del e


class _OnlyCudaArrayInterface:
    """A torch tensor seen only through `__cuda_array_interface__` (as numba shows one)."""

    def __init__(self, t: Any) -> None:
        self.t = t

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return dict(self.t.__cuda_array_interface__)


def test_the_cuda_array_interface_both_ways() -> None:
    x = torch.randn(2048, device="cuda")
    t = cutile.from_dlpack(_OnlyCudaArrayInterface(x))
    assert t.address == x.data_ptr()
    np.testing.assert_array_equal(t.to_numpy(), x.cpu().numpy())
    own = api.from_numpy(np.arange(64, dtype=np.float32))
    iface = own.__cuda_array_interface__
    assert iface["version"] == 3 and iface["data"] == (own.address, False)
    tt = torch.as_tensor(own, device="cuda")  # torch reads the interface
    assert tt.data_ptr() == own.address
    with pytest.raises(cutile.BorrowError, match="CT5041"):
        own.partition([8])  # pinned while the cutile object lives
    assert t.__cuda_array_interface__["data"][1] is True  # a shared import: read-only
    with pytest.raises(cutile.InteropError, match="CT5045"):
        api.zeros([8], bf16).__cuda_array_interface__  # noqa: B018
