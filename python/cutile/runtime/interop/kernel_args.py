"""Kernel calls that take another library's tensors: `add(z, torch_x, torch_y)`.

An argument of a read-only `Tensor` parameter that is another library's tensor is imported
shared (`cutile.from_dlpack`) for the call: the kernel only reads it, so nothing is asked
of the caller, and the op keeps the producer alive until it hands its arguments back (the
op's results hold the imported cutile tensors in its place).

An argument of a parameter the kernel writes (`Mut` partitions, `Atomic` tensors, `Ptr`s)
is never imported implicitly (LaunchError CT6112): writing another library's memory rests
on the caller's promise that nothing else touches it, which only an explicit
`cutile.unsafe.from_dlpack_exclusive(x)` makes, visible where the program makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import InteropError, LaunchError
from ...frontend import kast as K
from ..tensor import _Handle
from . import importing

_PROTOCOLS = ("__dlpack__", "__cuda_array_interface__", "__array_interface__")
_WRITTEN = {"mut_tensor": "a `Mut` output", "atomic_tensor": "an `Atomic` tensor",
            "ptr": "a `Ptr`"}


def is_foreign_tensor(value: Any) -> bool:
    """Another library's tensor (an object speaking an array protocol, not cutile's)."""
    cls = type(value)
    return not isinstance(value, _Handle) and any(hasattr(cls, p) for p in _PROTOCOLS)


def import_arguments(kernel: str, params: Sequence[K.Param], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`args` and `kwargs` with every foreign tensor of a read-only tensor parameter
    imported shared; a foreign tensor for a written parameter is a LaunchError (CT6112).
    Positional arguments are the non-`Const` parameters in order (as the binder places
    them); what matches no parameter is left for the binder to refuse."""
    if not any(is_foreign_tensor(v) for v in (*args, *kwargs.values())):
        return args, kwargs
    by_name = {p.name: p for p in params}
    new_args = tuple(_imported(kernel, params[i] if i < len(params) else None, v)
                     for i, v in enumerate(args))
    new_kwargs = {k: _imported(kernel, by_name.get(k), v) for k, v in kwargs.items()}
    return new_args, new_kwargs


def _explicit(param: K.Param) -> str:
    call = f"cutile.unsafe.from_dlpack_exclusive({param.name})"
    return call + ".partition(tile_shape)" if param.kind == "mut_tensor" else call


def _imported(kernel: str, param: K.Param | None, value: Any) -> Any:
    if param is None or not is_foreign_tensor(value):
        return value
    if param.kind in _WRITTEN:
        raise LaunchError(
            f"`{param.name}` of `{kernel}` is {_WRITTEN[param.kind]}, which the kernel "
            f"writes; a `{type(value).__name__}` is imported implicitly only for read-only "
            "parameters", code="CT6112",
            hint="import it explicitly, on your promise that nothing else touches it while "
            f"the op runs: `{_explicit(param)}`",
            kernel=kernel, tensor=param.name,
        )
    if param.kind != "tensor":
        return value  # a scalar or Const given an array: the binder says what is wrong
    try:
        return importing.from_dlpack(value)
    except InteropError as exc:
        raise InteropError(f"`{param.name}` of `{kernel}`: {exc.message}", code=exc.code,
                           hint=exc.hint) from None
