"""Element types shared by the DSL, the IR, the runtime and the interpreter."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)  # one object per dtype: identity is equality, hashing is cheap
class DType:
    """An element type. `name` is the Tile IR scalar name (`f32`, `bf16`, `i1`, ...)."""

    name: str
    bits: int
    kind: str  # "float" | "int" | "bool"
    numpy_name: str | None  # numpy dtype used on the host; None when numpy has none
    # The Tile IR spelling when it differs from `name`: Tile IR integers are signless, so
    # `u32` is an `i32` whose ops take `signedness = unsigned`.
    ir: str = ""
    unsigned: bool = False

    @property
    def ir_name(self) -> str:
        """The element type's name in Tile IR (`i32` for `u32`, `f8E4M3FN`)."""
        return self.ir or self.name

    @cached_property  # read on every allocation and view: computed once per dtype
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_f8(self) -> bool:
        """An 8-bit float: storage, conversions and `mma` only (no arithmetic in Tile IR)."""
        return self.kind == "float" and self.bits == 8

    @property
    def numpy(self) -> np.dtype[np.generic]:
        if self.name in _ML_DTYPES:
            ml: np.dtype[np.generic] = np.dtype(_ml_dtype(self.name))  # type: ignore[call-overload]
            return ml
        if self.numpy_name is None:
            raise TypeError(f"`{self.name}` has no numpy equivalent on the host")
        return np.dtype(self.numpy_name)

    def __repr__(self) -> str:
        return self.name


# Element types numpy has no dtype for: their host arrays use the `ml_dtypes` package's.
_ML_DTYPES = {"bf16": "bfloat16", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def _ml_dtype(name: str) -> object:
    try:
        import ml_dtypes

        return getattr(ml_dtypes, _ML_DTYPES[name])
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise TypeError(f"{name} host arrays need the `ml_dtypes` package") from exc


bool_ = DType("i1", 1, "bool", "bool")
i8 = DType("i8", 8, "int", "int8")
i16 = DType("i16", 16, "int", "int16")
i32 = DType("i32", 32, "int", "int32")
i64 = DType("i64", 64, "int", "int64")
f16 = DType("f16", 16, "float", "float16")
bf16 = DType("bf16", 16, "float", None)
f32 = DType("f32", 32, "float", "float32")
f64 = DType("f64", 64, "float", "float64")
tf32 = DType("tf32", 32, "float", "float32")
u8 = DType("u8", 8, "int", "uint8", ir="i8", unsigned=True)
u16 = DType("u16", 16, "int", "uint16", ir="i16", unsigned=True)
u32 = DType("u32", 32, "int", "uint32", ir="i32", unsigned=True)
u64 = DType("u64", 64, "int", "uint64", ir="i64", unsigned=True)
f8e4m3fn = DType("f8e4m3fn", 8, "float", None, ir="f8E4M3FN")
f8e5m2 = DType("f8e5m2", 8, "float", None, ir="f8E5M2")

ALL: dict[str, DType] = {
    d.name: d for d in (bool_, i8, i16, i32, i64, f16, bf16, f32, f64, tf32, u8, u16, u32, u64,
                        f8e4m3fn, f8e5m2)
}
# Names users may write in annotations (`f32`, `bool_`) map onto the same objects.
BY_PUBLIC_NAME: dict[str, DType] = {**ALL, "bool_": bool_, "bool": bool_}


def from_name(name: str) -> DType:
    try:
        return BY_PUBLIC_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype `{name}`") from None


def from_numpy(dtype: np.dtype[np.generic] | type) -> DType:
    dt = np.dtype(dtype)
    for d in (bf16, f8e4m3fn, f8e5m2):
        if dt.name == _ML_DTYPES[d.name]:
            return d
    for d in (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64):
        if d.numpy_name == dt.name:
            return d
    raise TypeError(f"numpy dtype `{dt}` has no cutile element type")

