"""The exceptions users see. Every one carries a stable `code` and, where there is a fix, a `hint`.

Code ranges:
  CT0xxx  frontend: unsupported syntax, unknown names, bad annotations
  CT1xxx  ownership and borrowing inside a kernel (Rust checker)
  CT2xxx  disjointness, index and bounds proofs (Rust checker)
  CT3xxx  types and shapes (lowering, once `Const` values are known)
  CT4xxx  unsafe operations outside `unsafe`
  CT5xxx  host ownership (`BorrowError`)
  CT6xxx  launch configuration (`LaunchError`)
  CT7xxx  compilation toolchain (`CompileError`)
  CT9xxx  internal errors (a bug in cutile; please report it)
"""

from __future__ import annotations

from typing import Any, ClassVar


class CutileError(Exception):
    """Base class of every cutile error."""

    code: str = "CT9000"

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.hint = hint

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.hint:
            text += f"\n  help: {self.hint}"
        return text


class KernelCheckError(CutileError):
    """A kernel broke a rule; raised before any code is generated.

    `diagnostics` holds one entry per violation (code, message, spans, hint); `str(err)`
    is the rustc-style rendering with the source line and a caret.
    """

    code = "CT1000"

    def __init__(self, rendered: str, diagnostics: list[Any], *, code: str | None = None,
                 result: Any = None) -> None:
        first_code = code or (getattr(diagnostics[0], "code", None) if diagnostics else None)
        super().__init__(rendered, code=first_code or "CT1000")
        self.diagnostics = diagnostics
        self.rendered = rendered
        # The checker's whole verdict (obligations, facts) where the checker ran; tools
        # read it, e.g. which outputs a rejected kernel walks persistently.
        self.result = result

    def __str__(self) -> str:
        return self.rendered

    @property
    def codes(self) -> list[str]:
        return [str(getattr(d, "code", "")) for d in self.diagnostics]


class BorrowError(CutileError):
    """Host ownership: a tensor was used while a pending operation holds it, partitioned while
    shared, or passed twice to one launch."""

    code = "CT5000"


class TensorError(CutileError, ValueError, TypeError):
    """A host tensor cannot be made as asked (`cutile.api`): a shape that is not a sequence
    of non-negative ints (CT5030), an element type cutile does not have (CT5031), a fill
    value or `arange` bound the element type cannot hold (CT5032), or more memory than can
    be had (CT5033). It is also a `ValueError` and a `TypeError`, the exceptions these
    mistakes raised before they had codes."""

    code = "CT5030"


class LaunchError(CutileError):
    """A launch does not match its kernel: grid, tile shape, dtype, rank or Const values."""

    code = "CT6000"


class CompileError(CutileError):
    """tileiras (or NVRTC) rejected the generated program; carries the Python line if known."""

    code = "CT7000"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        location: str | None = None,
        log: str = "",
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.location = location
        self.log = log

    def __str__(self) -> str:
        text = super().__str__()
        if self.location:
            text += f"\n  --> {self.location}"
        if self.log:
            text += "\n" + self.log.rstrip()
        return text


class DeviceError(CutileError):
    """The CUDA driver reported an error (out of memory, launch failure, ...)."""

    code = "CT6900"


class InternalCompilerError(CutileError):
    """A bug in cutile itself: an invariant broke. The message says where."""

    code = "CT9001"


class InterpreterError(CutileError):
    """The CPU interpreter stopped a kernel: an access outside every buffer, a failed `assert`,
    an index outside a partition's index space, or another fault the GPU would not report
    cleanly. `location` is the op's source location (if the IR carries one), `op` its name and
    `block_id` the tile block that was running."""

    code = "CT6910"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        location: str | None = None,
        op: str | None = None,
        block_id: tuple[int, int, int] | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.location = location
        self.op = op
        self.block_id = block_id

    def __str__(self) -> str:
        text = super().__str__()
        if self.op:
            text += f"\n  in op `{self.op}`"
        if self.block_id is not None:
            text += f" of tile block {self.block_id}"
        if self.location:
            text += f"\n  --> {self.location}"
        return text


class RaceError(InterpreterError):
    """The interpreter's race and bounds detector (`CUTILE_INTERPRET=check`) saw two tile blocks
    touch one element in a way the GPU would not order, or an access outside its tensor.

    Data for tools and tests: `kind` is "write-write" (CT6911), "read-write" (CT6912) or
    "out-of-bounds" (CT6913); `tensor` the kernel parameter's name and `element` the
    multi-index in that tensor (None when the address is inside no argument); `blocks` the
    block ids involved, the earlier one first; `location` is "path:line" of the op that made
    the second access; `kernel` the kernel's name."""

    code = "CT6911"
    CODES: ClassVar[dict[str, str]] = {
        "write-write": "CT6911", "read-write": "CT6912", "out-of-bounds": "CT6913",
    }

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        tensor: str | None = None,
        element: tuple[int, ...] | None = None,
        blocks: tuple[tuple[int, int, int], ...] = (),
        location: str | None = None,
        kernel: str | None = None,
        op: str | None = None,
        hint: str | None = None,
    ) -> None:
        if kind not in self.CODES:
            raise ValueError(f"unknown race kind {kind!r}")
        super().__init__(
            message,
            code=self.CODES[kind],
            hint=hint,
            location=location,
            op=op,
            block_id=blocks[-1] if blocks else None,
        )
        self.kind = kind
        self.tensor = tensor
        self.element = element
        self.blocks = blocks
        self.kernel = kernel

    def __str__(self) -> str:
        # The message already names the blocks and the line; repeating them as the
        # InterpreterError trailer would only add noise.
        return CutileError.__str__(self)


class OpNeverRunWarning(RuntimeWarning):
    """An op (what a kernel call, `.then(...)` or `cutile.zip(...)` returns) was dropped
    before anything ran it, as Python warns of a coroutine never awaited: nothing ran, and
    the tensors moved into it stay unusable (reading one raises `BorrowError` CT5009).
    The warning points at the line that made the op; run it with `.sync()` or `await`."""


__all__ = [
    "BorrowError",
    "CompileError",
    "CutileError",
    "DeviceError",
    "InternalCompilerError",
    "InterpreterError",
    "KernelCheckError",
    "LaunchError",
    "OpNeverRunWarning",
    "RaceError",
    "TensorError",
]
