"""Element types shared by the DSL, the IR, the runtime and the interpreter."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)  # one object per dtype: identity is equality, hashing is cheap
class DType:
    """An element type. `name` is the Tile IR scalar name (`f32`, `bf16`, `i1`, ...)."""

    name: str
    bits: int
    kind: str  # "float" | "int" | "bool"
    numpy_name: str | None  # numpy dtype used on the host; None when numpy has none

    @property
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
    def numpy(self) -> np.dtype[np.generic]:
        if self.name == "bf16":
            bf: np.dtype[np.generic] = np.dtype(_bfloat16_numpy())  # type: ignore[call-overload]
            return bf
        if self.numpy_name is None:
            raise TypeError(f"`{self.name}` has no numpy equivalent on the host")
        return np.dtype(self.numpy_name)

    def __repr__(self) -> str:
        return self.name


def _bfloat16_numpy() -> object:
    try:
        import ml_dtypes

        return ml_dtypes.bfloat16
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise TypeError("bf16 host arrays need the `ml_dtypes` package") from exc


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

ALL: dict[str, DType] = {
    d.name: d for d in (bool_, i8, i16, i32, i64, f16, bf16, f32, f64, tf32)
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
    if dt.name == "bfloat16":
        return bf16
    for d in (bool_, i8, i16, i32, i64, f16, f32, f64):
        if d.numpy_name == dt.name:
            return d
    raise TypeError(f"numpy dtype `{dt}` has no cutile element type")


def promote(a: DType, b: DType) -> DType:
    """Result type of a binary op between two tiles (numpy-like, but never widens f32 to f64
    on its own: both operands must agree or one must be a weakly typed Python scalar)."""
    if a == b:
        return a
    if a.is_float and not b.is_float:
        return a
    if b.is_float and not a.is_float:
        return b
    return a if a.bits >= b.bits else b
