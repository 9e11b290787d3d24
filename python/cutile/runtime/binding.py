"""Match a call's arguments to a kernel's parameters; infer `Const` values from partition
tile shapes and tensor shapes; compute the specialization facts of the live arguments."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..errors import LaunchError
from ..frontend import kast as K
from ..lowering.signature import Specialization, TensorFacts
from .tensor import Partition, Tensor

INT32_LIMIT = 2**31 - 1


@dataclass
class Binding:
    """A call's arguments, in parameter order (consts excluded), and what they imply."""

    kernel: str
    params: list[K.Param]  # non-const parameters, in order
    values: list[Any]
    consts: dict[str, int | float | bool]
    spec: Specialization
    grid: tuple[int, int, int]


def _kind_name(v: Any) -> str:
    if isinstance(v, Partition):
        return "a Partition"
    if isinstance(v, Tensor):
        return "a Tensor"
    return f"a `{type(v).__name__}`"


def bind(entry: K.Function, args: Sequence[Any], kwargs: dict[str, Any]) -> Binding:
    name = entry.name
    runtime_params = [p for p in entry.params if p.kind != "const"]
    const_params = {p.name: p for p in entry.params if p.kind == "const"}
    if len(args) > len(runtime_params):
        raise LaunchError(
            f"`{name}` takes {len(runtime_params)} positional arguments "
            f"({', '.join(p.name for p in runtime_params)}) but {len(args)} were given",
            code="CT6104",
            hint="pass Const parameters by keyword, e.g. `BK=64`",
        )
    values: dict[str, Any] = {p.name: a for p, a in zip(runtime_params, args, strict=False)}
    given_consts: dict[str, Any] = {}
    for k, v in kwargs.items():
        if k in const_params:
            given_consts[k] = v
        elif any(p.name == k for p in runtime_params):
            if k in values:
                raise LaunchError(f"`{name}` got argument `{k}` twice", code="CT6104")
            values[k] = v
        else:
            raise LaunchError(f"`{name}` has no parameter `{k}`", code="CT6104")
    missing = [p.name for p in runtime_params if p.name not in values]
    if missing:
        raise LaunchError(f"`{name}` is missing argument `{missing[0]}`", code="CT6104")

    consts: dict[str, int | float | bool] = {}
    origin: dict[str, str] = {}

    def infer(cname: str, value: int, source: str) -> None:
        if cname in consts and consts[cname] != value:
            raise LaunchError(
                f"`{cname}` is {consts[cname]} from {origin[cname]} but {value} from {source}",
                code="CT6103",
                hint="make the shapes agree, or drop the keyword that contradicts them",
            )
        consts[cname] = value
        origin.setdefault(cname, source)

    for cname, v in given_consts.items():
        p = const_params[cname]
        want = {"int": int, "float": float, "bool": bool}[p.dtype or "int"]
        if isinstance(v, bool) and want is not bool:
            raise LaunchError(f"`{cname}` expects {p.dtype}, got a bool", code="CT6102")
        if want is int and not isinstance(v, numbers.Integral):
            raise LaunchError(f"`{cname}` expects an int, got {v!r}", code="CT6102")
        if want is float and not isinstance(v, numbers.Real):
            raise LaunchError(f"`{cname}` expects a float, got {v!r}", code="CT6102")
        consts[cname] = want(v)
        origin[cname] = f"the keyword `{cname}={v}`"

    facts: list[tuple[str, TensorFacts]] = []
    ordered: list[Any] = []
    index_bits = 32
    for p in runtime_params:
        v = values[p.name]
        if p.kind == "mut_tensor":
            if not isinstance(v, Partition):
                hint = (f"partition it: `{p.name}.partition([...])`" if isinstance(v, Tensor)
                        else None)
                raise LaunchError(
                    f"`{p.name}` is a kernel output (`Mut`); it takes a Partition, not "
                    f"{_kind_name(v)}", code="CT6101", hint=hint,
                )
            _check_dtype(name, p, v.dtype)
            declared = p.shape or []
            if len(declared) != len(v.tile_shape):
                raise LaunchError(
                    f"`{p.name}` is declared with {len(declared)}-D tiles but the partition's "
                    f"tiles are {list(v.tile_shape)}", code="CT6106",
                )
            for axis, (d, actual) in enumerate(zip(declared, v.tile_shape, strict=True)):
                if isinstance(d, str):
                    infer(d, actual, f"the tile shape of `{p.name}` (axis {axis})")
        elif p.kind == "tensor":
            if isinstance(v, Partition):
                raise LaunchError(
                    f"`{p.name}` is a shared input; it takes a Tensor, not a Partition",
                    code="CT6101", hint=f"pass `{p.name}.unpartition()`",
                )
            if not isinstance(v, Tensor):
                raise LaunchError(f"`{p.name}` takes a Tensor, not {_kind_name(v)}",
                                  code="CT6101", hint="build one with cutile.api.from_numpy")
            _check_dtype(name, p, v.dtype)
            declared = p.shape or []
            if len(declared) != v.ndim:
                raise LaunchError(
                    f"`{p.name}` is declared {len(declared)}-D but the tensor has shape "
                    f"{list(v.shape)}", code="CT6105",
                )
            for axis, (d, actual) in enumerate(zip(declared, v.shape, strict=True)):
                if isinstance(d, str):
                    infer(d, actual, f"the shape of `{p.name}` (axis {axis})")
                elif d != -1 and d != actual:
                    raise LaunchError(
                        f"`{p.name}` must have size {d} on axis {axis}; it has {actual}",
                        code="CT6105",
                    )
        elif p.kind == "scalar":
            v = _scalar(name, p, v)
        elif p.kind == "ptr":
            raise LaunchError("pointer parameters are not supported by the launcher yet",
                              code="CT6110")
        if isinstance(v, (Tensor, Partition)):
            facts.append((p.name, TensorFacts.of(v.dtype, v.shape, v.strides, v.address)))
            extent = sum(abs(s) * max(d - 1, 0) for s, d in zip(v.strides, v.shape, strict=True))
            if extent > INT32_LIMIT or any(d > INT32_LIMIT for d in v.shape):
                index_bits = 64
        ordered.append(v)

    for cname in const_params:
        if cname not in consts:
            raise LaunchError(
                f"no value for `{cname}`: no partition or tensor shape determines it",
                code="CT6104", hint=f"pass it by keyword: `{name}(..., {cname}=...)`",
            )
    for cname, value in consts.items():
        if const_params[cname].dtype == "int" and isinstance(value, int) and value < 1 and any(
            cname in (p.shape or []) for p in runtime_params
        ):
            raise LaunchError(f"`{cname}` must be >= 1, got {value}", code="CT6103")

    spec = Specialization(
        tuple(sorted(consts.items())), tuple(facts), index_bits,
    )
    return Binding(name, runtime_params, ordered, consts, spec, (0, 0, 0))


class Binder:
    """A kernel's argument matcher, prepared once. The common call never gets here: the
    native launcher (`cutile._native.KernelLauncher`) matches it. `bind` is the full path
    that produces every error message, and normalizes what the native path declined
    (keywords, numpy scalars, ints for float parameters)."""

    def __init__(self, entry: K.Function) -> None:
        self.entry = entry
        self.params = [p for p in entry.params if p.kind != "const"]
        self._specs: dict[tuple[Any, ...], Specialization] = {}

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Binding:
        b = bind(self.entry, args, kwargs)
        b.spec = self._specs.setdefault(_key(b.spec), b.spec)
        return b


def _key(spec: Specialization) -> tuple[Any, ...]:
    return (spec.consts, spec.tensors, spec.index_bits)


def _check_dtype(kernel: str, p: K.Param, actual: dt.DType) -> None:
    if p.dtype != actual.name:
        raise LaunchError(
            f"`{p.name}` of `{kernel}` expects `{p.dtype}` elements, got `{actual.name}`",
            code="CT6102",
        )


def _scalar(kernel: str, p: K.Param, v: Any) -> int | float | bool:
    d = dt.from_name(p.dtype or "f32")
    if isinstance(v, (Tensor, Partition)):
        raise LaunchError(f"`{p.name}` is a scalar `{d.name}`, not a tensor", code="CT6101")
    if d.is_float:
        if not isinstance(v, numbers.Real):
            raise LaunchError(f"`{p.name}` expects a number, got {v!r}", code="CT6102")
        return float(v)
    if d.is_bool:
        return bool(v)
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise LaunchError(f"`{p.name}` expects an integer, got {v!r}", code="CT6102")
    iv = int(v)
    lo, hi = -(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1
    if not lo <= iv <= hi:
        raise LaunchError(f"`{p.name}` = {iv} does not fit in `{d.name}`", code="CT6102")
    return iv
