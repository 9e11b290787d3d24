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
  CT8xxx  configuration: environment variables, the command line, the cubin cache
          (`ConfigError`, `CutileWarning`)
  CT9xxx  internal errors (a bug in cutile; please report it)
"""

from __future__ import annotations

from typing import Any, ClassVar

from .diagnostic_data import DiagnosticData


def _rebuild(cls: type[CutileError], args: tuple[Any, ...], state: dict[str, Any]
             ) -> CutileError:
    """Unpickle without calling `__init__` (whose signature differs per class)."""
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class CutileError(Exception):
    """Base class of every cutile error. Every one pickles (to another process: pytest-xdist,
    multiprocessing) with its code, message, hint and data, and `data()` gives it as plain,
    JSON-ready values."""

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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self._pickled_state()))

    def _pickled_state(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.setdefault("code", self.code)  # a class default, kept explicit
        return state

    def _fields(self) -> dict[str, Any]:
        """What `data()` adds for this class."""
        return {}

    def data(self) -> dict[str, Any]:
        """The error as plain data: `error` (the class name), `code`, `message`, `hint`, and
        the class's own fields (a `KernelCheckError`'s diagnostics, the tensor, kernel and op
        a `BorrowError` or `LaunchError` names, ...). Ints, strings, lists and dicts only."""
        return {"error": type(self).__name__, "code": self.code, "message": self.message,
                "hint": self.hint, **self._fields()}


class KernelCheckError(CutileError):
    """A kernel broke a rule; raised before any code is generated.

    `diagnostics` holds one `DiagnosticData` per violation (code, severity, message, the
    primary and secondary labels with their spans, notes, help; `to_dict()` for JSON);
    `codes` lists their codes; `str(err)` is the rustc-style rendering with the source line
    and a caret.
    """

    code = "CT1000"

    def __init__(self, rendered: str, diagnostics: list[Any], *, code: str | None = None,
                 result: Any = None) -> None:
        first_code = code or (getattr(diagnostics[0], "code", None) if diagnostics else None)
        super().__init__(rendered, code=first_code or "CT1000")
        self.diagnostics: list[DiagnosticData] = [DiagnosticData.of(d) for d in diagnostics]
        self.rendered = rendered
        # The checker's whole verdict (obligations, facts) where the checker ran; tools
        # read it, e.g. which outputs a rejected kernel walks persistently. It stays in the
        # process that raised the error (None once unpickled).
        self.result = result

    def __str__(self) -> str:
        return self.rendered

    @property
    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]

    def _pickled_state(self) -> dict[str, Any]:
        return {**super()._pickled_state(), "result": None}

    def _fields(self) -> dict[str, Any]:
        return {"diagnostics": [d.to_dict() for d in self.diagnostics],
                "rendered": self.rendered}


class _Names:
    """The tensor, kernel and op an ownership or launch error names, where the layer that
    raised it knew them: `tensor` the parameter the tensor was passed as, `kernel` the
    kernel, `op_id` the op's number (`op` reads "`kernel` (op #id)")."""

    kernel: str | None
    op_id: int | None
    tensor: str | None

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None,
                 tensor: str | None = None, kernel: str | None = None,
                 op_id: int | None = None) -> None:
        super().__init__(message, code=code, hint=hint)  # type: ignore[call-arg]  # CutileError
        self._set_names(kernel, op_id, tensor)

    def _set_names(self, kernel: str | None, op_id: int | None, tensor: str | None) -> None:
        self.kernel, self.op_id, self.tensor = kernel, op_id, tensor

    def _fields(self) -> dict[str, Any]:
        return self._names()

    @property
    def op(self) -> str | None:
        if self.op_id is None:
            return None
        return f"`{self.kernel}` (op #{self.op_id})" if self.kernel else f"op #{self.op_id}"

    def _names(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "kernel": self.kernel, "op_id": self.op_id,
                "op": self.op}


class BorrowError(_Names, CutileError):
    """Host ownership: a tensor was used while a pending operation holds it (or after one
    was dropped without running), partitioned while shared, or passed twice to one launch.
    `tensor`, `kernel`, `op_id` / `op` name what it is about where known."""

    code = "CT5000"


class TensorError(CutileError, ValueError, TypeError):
    """A host tensor cannot be made as asked (`cutile.api`): a shape that is not a sequence
    of non-negative ints (CT5030), an element type cutile does not have (CT5031), a fill
    value or `arange` bound the element type cannot hold (CT5032), or more memory than can
    be had (CT5033). It is also a `ValueError` and a `TypeError`, the exceptions these
    mistakes raised before they had codes."""

    code = "CT5030"


class AnnotationError(CutileError, TypeError):
    """A kernel parameter annotation written wrong (`Tensor[f32, [0]]`, `Mut[f32]`,
    `Const[str]`), raised where Python evaluates it (CT0003), with the annotation's line
    and a caret where the source is at hand. It is also a `TypeError`, what these mistakes
    raised before they had a code."""

    code = "CT0003"
    rendered: str | None = None  # the diagnostic with the source line, where it was found

    def __str__(self) -> str:
        return self.rendered or super().__str__()


class TensorIndexError(TensorError, IndexError):
    """`t[...]` that names no view of the tensor (CT5037): more indices than axes, an int
    out of range, a slice with a step below 1, or an index that is neither an int nor a
    slice. It is also an `IndexError` (what `t[i]` raises past the end, so iteration
    stops) and a `TypeError`."""

    code = "CT5037"


class InteropError(TensorError, BufferError):
    """Another library's tensor cannot be imported as asked, or a cutile tensor cannot be
    exported as asked (`cutile.from_dlpack`, `cutile.unsafe.from_dlpack_exclusive`,
    `Tensor.__dlpack__`, `__cuda_array_interface__`): an object that is no tensor
    (CT5042), another device (CT5043), a layout cutile cannot use (CT5044), an export
    request the protocol does not allow (CT5045), an exclusive import of memory the
    producer marked read-only or copied (CT5046) or that another live import or export
    views (CT5047), an element type cutile does not have (CT5031). It is also a
    `BufferError`, what the DLPack protocol raises for a tensor it cannot exchange."""

    code = "CT5042"


class LaunchError(_Names, CutileError):
    """A launch does not match its kernel: grid, tile shape, dtype, rank or Const values.
    `kernel` names the kernel and `tensor` the parameter the error is about, where known."""

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

    def _fields(self) -> dict[str, Any]:
        return {"location": self.location, "log": self.log}


class DeviceError(CutileError):
    """The CUDA driver reported an error (out of memory, launch failure, ...)."""

    code = "CT6900"


class DistributedError(CutileError):
    """A collective cannot run as asked (`cutile.distributed`): torch.distributed with NCCL
    is missing or not set up for it (CT6130)."""

    code = "CT6130"


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

    def _fields(self) -> dict[str, Any]:
        block = list(self.block_id) if self.block_id is not None else None
        return {"location": self.location, "op": self.op, "block_id": block}

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

    def _fields(self) -> dict[str, Any]:
        return {**super()._fields(), "kind": self.kind, "tensor": self.tensor,
                "element": list(self.element) if self.element is not None else None,
                "blocks": [list(b) for b in self.blocks], "kernel": self.kernel}

    def __str__(self) -> str:
        # The message already names the blocks and the line; repeating them as the
        # InterpreterError trailer would only add noise.
        return CutileError.__str__(self)


class ConfigError(CutileError):
    """A setting cutile cannot use: an environment variable with an unknown value, a
    command-line argument that does not parse, a file that cannot be read or written."""

    code = "CT8000"


class AutotuneError(ConfigError):
    """No config of an autotuning search space (`cutile.autotune`) survived for this call:
    each one failed the checker with its `Const` values, did not bind to the arguments,
    or did not compile. `kernel` names the kernel; `failures` lists every config with the
    code and message of its failure (plain values, JSON-ready)."""

    code = "CT8022"

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None,
                 kernel: str | None = None,
                 failures: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message, code=code, hint=hint)
        self.kernel = kernel
        self.failures = list(failures or [])

    def _fields(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "failures": self.failures}


class CutileWarning(UserWarning):
    """Base class of every warning cutile emits. Each carries a stable `code` like the
    errors do, so a filter can name one (`-W error::cutile.CutileWarning`)."""

    code: str = "CT8900"


class CacheWarning(CutileWarning):
    """The cubin cache cannot be used (e.g. its directory is not writable): kernels still
    compile, only without caching. Emitted once per directory and process."""

    code = "CT8901"


class OpNeverRunWarning(CutileWarning, RuntimeWarning):
    """An op (what a kernel call, `.then(...)` or `cutile.zip(...)` returns) was dropped
    before anything ran it, as Python warns of a coroutine never awaited: nothing ran, and
    the tensors moved into it stay unusable (reading one raises `BorrowError` CT5009).
    The warning points at the line that made the op; run it with `.sync()` or `await`."""

    code = "CT8902"


__all__ = [
    "AutotuneError",
    "BorrowError",
    "CacheWarning",
    "CompileError",
    "ConfigError",
    "CutileError",
    "CutileWarning",
    "DeviceError",
    "InternalCompilerError",
    "InteropError",
    "InterpreterError",
    "KernelCheckError",
    "LaunchError",
    "OpNeverRunWarning",
    "RaceError",
    "TensorError",
    "TensorIndexError",
]
