"""DLPack's numbers (dlpack.h 1.1): element type codes, device types and flags, and the
cutile element type of each."""

from __future__ import annotations

from ... import dtypes as dt
from ...dtypes import DType
from ...errors import InteropError

# DLDeviceType
CPU = 1
CUDA = 2
CUDA_HOST = 3  # pinned host memory (cudaMallocHost)
CUDA_MANAGED = 13  # unified memory (cudaMallocManaged)

DEVICE_NAMES = {
    1: "host memory (CPU)", 2: "a CUDA GPU", 3: "pinned host memory", 4: "an OpenCL device",
    7: "a Vulkan device", 8: "a Metal GPU", 9: "the Verilog simulator", 10: "a ROCm GPU",
    11: "pinned ROCm host memory", 12: "an extension device", 13: "CUDA managed memory",
    14: "a oneAPI device", 15: "a WebGPU device", 16: "a Hexagon DSP", 17: "a MAIA device",
    18: "an AWS Trainium device",
}

# DLPACK_FLAG_BITMASK_*
READ_ONLY = 1
IS_COPIED = 2

# DLDataTypeCode of every cutile element type, with its bit width. `tf32` is stored as
# `f32` and leaves as one; DLPack's bool is a byte.
_CODES: dict[DType, tuple[int, int]] = {
    dt.bool_: (6, 8),
    dt.i8: (0, 8), dt.i16: (0, 16), dt.i32: (0, 32), dt.i64: (0, 64),
    dt.u8: (1, 8), dt.u16: (1, 16), dt.u32: (1, 32), dt.u64: (1, 64),
    dt.f16: (2, 16), dt.f32: (2, 32), dt.f64: (2, 64), dt.tf32: (2, 32),
    dt.bf16: (4, 16),
    dt.f8e4m3fn: (10, 8), dt.f8e5m2: (12, 8),
}
_BY_CODE: dict[tuple[int, int], DType] = {v: k for k, v in _CODES.items() if k is not dt.tf32}

# Type codes cutile has no element type for, by name (for the error message).
_OTHER_CODES = {
    3: "opaque handle", 5: "complex", 7: "float8_e3m4", 8: "float8_e4m3",
    9: "float8_e4m3b11fnuz", 11: "float8_e4m3fnuz", 13: "float8_e5m2fnuz",
    14: "float8_e8m0fnu", 15: "float6_e2m3fn", 16: "float6_e3m2fn", 17: "float4_e2m1fn",
}
_KIND = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool", 10: "float8_e4m3fn",
         12: "float8_e5m2"}


def dlpack_dtype(dtype: DType) -> tuple[int, int, int]:
    """`(code, bits, lanes)` of a cutile element type."""
    code, bits = _CODES[dtype]
    return code, bits, 1


def from_dlpack_dtype(code: int, bits: int, lanes: int) -> DType:
    """The cutile element type of a DLPack `(code, bits, lanes)`; `InteropError` CT5031
    for one cutile does not have."""
    got = _BY_CODE.get((code, bits)) if lanes == 1 else None
    if got is not None:
        return got
    name = _OTHER_CODES.get(code) or f"{_KIND.get(code, f'type code {code}')}{bits}"
    if lanes != 1:
        name += f" x {lanes} lanes"
    raise InteropError(
        f"the tensor's element type ({name}; DLPack code {code}, {bits} bits) has no cutile "
        "element type", code="CT5031",
        hint="convert it on the producer's side first (e.g. `x.float()` in torch, "
        "`x.astype(np.float32)` in numpy); cutile has bool, i8-i64, u8-u64, f16, bf16, f32, "
        "f64, f8e4m3fn and f8e5m2",
    )


def device_name(device: tuple[int, int]) -> str:
    kind, index = device
    name = DEVICE_NAMES.get(kind, f"DLPack device type {kind}")
    return f"{name} (device {index})" if kind in (CUDA, 10, 4, 7, 14) else name
