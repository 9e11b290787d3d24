"""Type stubs for `cutile._native`, the PyO3 extension built from `rust/cutile-py`.

This file is the contract between the Python package and the Rust crates. The Rust side
never raises for a *user* mistake found while checking a kernel (that comes back as
diagnostics); host-rule violations raise the Python exception classes defined in
`cutile.errors` (`BorrowError`, `LaunchError`), which carry `.code` and `.hint`. Malformed
input raises `ValueError`; nothing panics across the boundary.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self, final

from typing_extensions import disjoint_base

from cutile.runtime.device_op import DeviceOp

__all__ = [
    "DRIVER_SYMBOLS",
    "KAST_SCHEMA",
    "KAST_VERSION",
    "OP_TABLE_JSON",
    "CheckResult",
    "DLPackTensor",
    "DeviceBuffer",
    "Diagnostic",
    "GraphAccesses",
    "HandleMeta",
    "HostRegistry",
    "KernelBase",
    "KernelLauncher",
    "KernelOp",
    "Label",
    "Ledger",
    "Obligation",
    "Runtime",
    "SlowPath",
    "check_kernel",
    "dlpack_capsule",
    "dlpack_take",
    "invalidate_launchers",
    "list_all_error_codes",
    "list_error_codes",
    "mapped_schedule",
    "next_op_id",
    "null_driver",
    "render_diagnostics",
    "set_default_device",
    "set_thread_device",
    "thread_device",
    "validate_launch",
]

KAST_SCHEMA: str  # "cutile.kast"
KAST_VERSION: int  # 3
OP_TABLE_JSON: str  # rust/cutile-kast/ops.json: the DSL signature table

@final
class Label:
    file: str  # path of the source file
    lo: int  # UTF-8 byte offsets into that file
    hi: int
    line: int  # 1-based
    col: int  # 0-based byte column
    end_line: int
    end_col: int
    message: str

@final
class Diagnostic:
    code: str  # stable, e.g. "CT1002"
    severity: str  # "error" | "warning"
    message: str  # one line, lowercase, no final period
    primary: Label
    secondary: list[Label]
    notes: list[str]
    help: str | None
    def render(self, color: bool = False) -> str: ...

@final
class Obligation:
    """One safety obligation of a kernel and how it was discharged."""

    kind: str  # e.g. "store-own-tile", "store-index-injective", "bounds"
    description: str  # human-readable, names the parameter and axis
    discharged: str  # "static" | "launch" | "device" | "failed"
    predicate: str | None  # for "launch"/"device": the condition, as text (never parsed)
    span: Label
    node_path: list[int]  # ids of the `call_device` nodes from the entry to the node
    nid: int  # the node (a DSL call) the obligation belongs to

@final
class CheckResult:
    """The checker's verdict and its facts (`cutile_facts::KernelFacts`): what the lowering
    and the launcher act on, and nothing else decides."""

    ok: bool
    diagnostics: list[Diagnostic]
    obligations: list[Obligation]
    outputs: list[tuple[str, str]]  # (Mut parameter, "partitioned" | "persistent")
    grid_rank: int
    index_width: int  # bits of the integers the prover reasoned in
    device_checks: list[tuple[list[int], int]]  # (node path, nid): emit a device assert
    checked_nodes: list[tuple[list[int], int]]  # (node path, nid): every checked access
    loop_counters: list[tuple[list[int], int, int]]  # (node path, nid, bits) per `for`
    # (node path, nid, param, rank, axis, map, group_max) per `iter_indices()` loop (keyed
    # by the `iter_indices` call): the schedule the lowering emits
    schedules: list[tuple[list[int], int, str, int, int, str, int]]
    # (node path, nid, branch) per folded test: a bool for literals, None for Const values
    folded_branches: list[tuple[list[int], int, bool | None]]
    def rendered(self, color: bool = False) -> str: ...

def check_kernel(kast_json: str) -> CheckResult:
    """Run every kernel-level rule on a serialized kernel AST (docs/kernel-ast.md)."""

def render_diagnostics(diagnostics_json: str, color: bool = False) -> str:
    """Render diagnostics made on the Python side (frontend, lowering) like the checker's.

    Input: {"files": [{"path", "source"}], "diagnostics": [{"code", "severity", "message",
    "primary": {"span": Span, "message"}, "secondary": [...], "notes": [...], "help"}]}
    with Span as in docs/kernel-ast.md.
    """

def list_error_codes() -> list[tuple[str, str]]:
    """Every kernel-rule code with its one-line summary."""

def list_all_error_codes() -> list[tuple[str, str]]:
    """Every code (kernel CT1/2/4xxx, host CT5xxx, launch CT6xxx) with its summary."""

@final
class HostRegistry:
    """Host-side ownership of device memory (DESIGN.md §3, host rules).

    A *storage* is one allocation; a *handle* is one live Python tensor object viewing a byte
    region of a storage (offset, shape, strides in elements, item size). Handles are moved
    into a pending operation for as long as the GPU uses them and handed back afterwards.
    """

    def __init__(self) -> None: ...
    def new_storage(self, nbytes: int) -> int: ...
    def new_handle(
        self,
        storage: int,
        offset: int,
        shape: Sequence[int],
        strides: Sequence[int],
        itemsize: int,
    ) -> int: ...
    def release_handle(self, handle: int) -> None:
        """The Python object died; a storage with no handles left may be freed."""

    def storage_live_handles(self, storage: int) -> int: ...
    def check_live(self, handle: int, what: str) -> None:
        """Raise BorrowError (naming the op that holds it) unless `handle` is live."""

    def consume(self, handle: int, by: str, require_unique: bool) -> int:
        """Consume a live handle and return a new one on the same region.

        `partition` and `unpartition` use this. With `require_unique`, the storage must have
        no other live or moved handle (host rule 1), else BorrowError.
        """

    def move_in(self, op_id: int, op_name: str, args: Sequence[tuple[int, bool]]) -> None:
        """Move handles into pending op `op_id` (host rule 3), all or nothing.

        `args` are (handle, mutable). Raises BorrowError if a handle is not live, if one handle
        appears twice with either use mutable, or if a mutable argument's bytes may overlap
        another argument's bytes (stride-aware, host rule 2).
        """

    def give_back(self, op_id: int) -> None:
        """The op completed (or failed before launch): its handles are live again."""

    def abandon(self, op_id: int, params: Sequence[tuple[int, str]]) -> int:
        """The op was dropped without running: its handles stay unusable for good (CT5009),
        each named by its parameter (`(handle, parameter)`). Returns how many."""

    def holder(self, handle: int) -> str | None:
        """Name of the op holding a moved handle, else None."""

    def hold(self, op_id: int, name: str, handles: Sequence[int]) -> int:
        """Move every live handle into long-lived holder `op_id` (a CUDA Graph) until
        `give_back`; every use of them is refused meanwhile (CT5001)."""
    def guard(self, op_id: int, storages: Sequence[int]) -> int:
        """Long-lived holder `op_id` guards `storages` (the memory its replays read or
        write) until `give_back`: any other write of them (a mutable launch argument, a
        `partition`), through any handle, is refused (CT5001). Returns how many."""
    def restore(self, original: int, current: int, by: str) -> None:
        """Undo a consume that failed work never used: `current` is consumed (`by`), the
        consumed `original` (same storage and region) is live again (CT5007 otherwise)."""

    def drop_storage(self, storage: int) -> bool:
        """The storage's memory was freed: forget it (whether it was known)."""

    def storage_count(self) -> int:
        """Storages (live allocations) the registry knows."""

    def new_shared_storage(self, nbytes: int) -> int:
        """A storage of foreign memory imported shared (`cutile.from_dlpack`): a launch
        that would write a handle of it, or `partition`, raises BorrowError CT5040."""

    def pin_export(self, storage: int) -> int:
        """Another library got a view of `storage` (a DLPack or `__cuda_array_interface__`
        export): until the matching `unpin_export`, writes of it raise BorrowError CT5041.
        Returns the live export count."""

    def unpin_export(self, storage: int) -> int:
        """An export of `storage` ended; returns the live export count."""

    def check_writable(self, storages: Sequence[int], what: str) -> None:
        """BorrowError CT5040 (imported shared) / CT5041 (exported) unless cutile alone may
        write every storage of `storages`."""
    def storage_sharing(self, storage: int) -> tuple[bool, int]:
        """(imported shared, live exports) of `storage`."""

DRIVER_SYMBOLS: list[str]

@final
class Runtime:
    """The streams of every device of the process (or the interpreter's virtual streams),
    the in-flight ledger of byte ranges per pending piece of work with its stream
    position, and the driver calls that order work across streams and devices (events),
    host reads (waits) and frees (stream-ordered). `Ledger` is the same class (its old
    name)."""

    def __new__(
        cls,
        registry: HostRegistry | None = None,
        streams: int = 1,
        driver: dict[str, int] | None = None,
        handles: Sequence[tuple[int, int]] | None = None,
        mem_pool: int = 0,
        devices: int = 1,
        device: int = 0,
        context: int = 0,
    ) -> Self:
        """The interpreter: `streams` virtual streams per device. The GPU: `driver` maps
        each of `DRIVER_SYMBOLS` to its address. `devices`: how many there are; `device` is
        set up now with `handles` (its pool's (CUstream, CUevent) pairs), `mem_pool` (its
        CUmemoryPool) and `context` (its primary context), as `add_device` does.
        `registry`: whose storages frees forget."""
    def add_device(self, device: int, handles: Sequence[tuple[int, int]] | None = None,
                   mem_pool: int = 0, context: int = 0) -> list[int]:
        """Set up `device` (idempotent); returns its pool's slots."""
    def has_device(self, device: int) -> bool: ...
    @property
    def device_count(self) -> int: ...
    @property
    def gpu(self) -> bool: ...
    @property
    def pool(self) -> list[int]:
        """The current device's pool of stream slots (ops take them in turn)."""
    def pool_of(self, device: int | None = None) -> list[int]:
        """The pool's stream slots of `device` (default: the current one)."""
    def add_stream(self, stream: int = 0, event: int = 0, name: str = ...,
                   device: int | None = None) -> int: ...
    def retire_stream(self, slot: int) -> None:
        """Wait for the slot's work, then close it (not a pool stream)."""
    def stream_info(self, slot: int) -> tuple[int, str, bool, int]:
        """(CUstream, name, open, device)."""
    def current(self) -> int | None:
        """This thread's current stream."""
    def set_current(self, slot: int | None = None) -> int | None:
        """Set this thread's current stream (current for work on its device); returns
        the previous."""
    def pick(self, device: int | None = None) -> int:
        """The slot the next op on `device` runs on (the current stream if on that
        device, else its pool round-robin)."""
    def home(self, device: int | None = None) -> int:
        """Where allocations and host copies on `device` go."""
    def synchronize(self, slot: int | None = None) -> None: ...
    def wait_for(self, slot: int, seq: int) -> None: ...
    def query(self, slot: int, seq: int) -> bool: ...
    def release_cached(self, device: int | None = None) -> int:
        """Give every freed block of `device` (None: of every device) kept for reuse back
        to its pool; returns how many."""
    def cached_bytes(self, device: int | None = None) -> int:
        """Bytes of freed blocks of `device` (None: of every device) kept for reuse on
        their streams."""
    def host_access(self, storage: int, lo: int, hi: int, exclusive: bool) -> None:
        """Wait until the host may read (or write) the bytes; BorrowError CT5060 for bytes
        a capture records, CT5008 for an external holder's."""
    def note(self, slot: int, accesses: Sequence[tuple[int, int, int, bool]],
             token: int = 0) -> int:
        """Record work already done (the interpreter) as enqueued on `slot` now."""
    def fill(self, slot: int, storage: int, address: int, lo: int, nbytes: int,
             pattern: Sequence[int]) -> None: ...
    def copy_htod(self, slot: int, storage: int, address: int, lo: int, src: int,
                  nbytes: int) -> None: ...
    def copy_dtod(self, slot: int, dst: tuple[int, int, int], src: tuple[int, int, int],
                  nbytes: int) -> int: ...
    def copy_peer(self, slot: int, dst: tuple[int, int, int, int],
                  src: tuple[int, int, int, int], nbytes: int) -> int:
        """cuMemcpyPeerAsync between devices, `(storage, address, lo, device)` each."""
    def begin_external(self, token: int, slot: int,
                       accesses: Sequence[tuple[int, int, int, bool]],
                       label: str | None = None) -> None:
        """Work another library enqueues: order `slot`, hold the ranges (CT5008 to others,
        naming the holder by `label`)."""
    def end_external(self, token: int, slot: int,
                     accesses: Sequence[tuple[int, int, int, bool]]) -> int:
        """The work is on `slot`: its ranges move to the position after it."""
    def abort_external(self, token: int) -> int: ...
    def launch_graph(self, slot: int, token: int, exec: int, accesses: GraphAccesses) -> int:
        """Replay an instantiated graph, ordered and recorded by its capture's ranges."""
    def launch_kernel(self, slot: int, token: int, accesses: Sequence[tuple[int, int, int, bool]],
                      function: int, grid: tuple[int, int, int], block: tuple[int, int, int],
                      shared_mem: int, params: int, record: Any = None) -> tuple[int, bool]:
        """cuLaunchKernel of a raw kernel on `slot`, ordered like every launch."""
    def wait_code(self, slot: int, seq: int) -> int:
        """Wait for position `seq` of `slot`; the CUresult (0: done)."""
    def free_storage(self, storage: int, home: int = 0) -> None: ...
    def begin_capture(self, slot: int, recording: list[Any]) -> None: ...
    def end_capture(self, slot: int) -> GraphAccesses: ...
    def begin_host_work(self) -> None:
        """The interpreter: hold its host work (re-entrant) while this thread enqueues work
        and runs it; another thread's wait for that work waits for `end_host_work()`."""
    def end_host_work(self) -> None: ...
    def capturing(self, slot: int) -> bool: ...
    def acquire(self, token: int, accesses: Sequence[tuple[int, int, int, bool]],
                label: str | None = None) -> None:
        """Record (storage, lo, hi, exclusive) byte ranges for an external holder `token`,
        all or nothing. Raises BorrowError (CT5008) on a conflict with pending work.
        `label`: what the holder is, as the errors of what it refuses name it."""
    def release(self, token: int) -> int:
        """Drop `token`'s ranges; returns how many."""
    def conflicts(self, storage: int, lo: int, hi: int, exclusive: bool) -> list[int]:
        """Tokens of pending work this access conflicts with."""
    def __len__(self) -> int: ...
    def heap_bytes(self) -> int: ...
    def stats(self) -> dict[str, int]: ...

Ledger = Runtime

@final
class GraphAccesses:
    """The ranges a captured graph touches, held natively; each replay is ordered and
    recorded by them."""
    def __len__(self) -> int: ...
    def tuples(self) -> list[tuple[int, int, int, bool]]: ...


@disjoint_base
class DeviceBuffer:
    """Device memory from the runtime's pool, freed (stream-ordered, after pending work on
    it) with its last reference."""

    def __new__(cls, runtime: Runtime, registry: HostRegistry | None, nbytes: int,
                device: int | None = None, *args: Any, **kwargs: Any) -> Self:
        """Allocate `nbytes` (a new storage of `registry`, the process's when None) of
        `device` (None: the current device, found natively; it must be set up) on this
        thread's home stream there. MemoryError when the device is full; BorrowError
        CT5063 while this thread captures a graph."""
    @property
    def address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def storage(self) -> int: ...
    @property
    def slot(self) -> int: ...
    @property
    def device(self) -> int: ...

def null_driver(context: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """`({symbol: address}, {symbol: calls so far})` of a CUDA driver that does nothing:
    every entry point succeeds at once and counts its call, allocations hand out addresses
    nothing touches, the current context is kept per thread (`context`: make it this
    thread's first, uncounted) and `cuLaunchKernelEx` checks its PDL attribute. A
    `Runtime` made with it runs the GPU code path without a GPU, for tests and benchmarks
    of the host's part (`cutile.runtime.null_gpu`)."""

def mapped_schedule(
    tile_grid: Sequence[int], num_blocks: int, group: int = 1
) -> list[list[list[int]]]:
    """The tiles each block visits under `iter_indices()`: a grid-stride loop over flat tile
    ids, each mapped by the grouped swizzle of the trailing two axes (a bijection). Raises
    ValueError for rank outside 1..3, empty extents, or more blocks than tiles."""

def validate_launch(
    kernel: str,
    grid: tuple[int, int, int],
    partitions: Sequence[tuple[str, Sequence[int], Sequence[int], Sequence[int]]],
) -> tuple[int, int, int]:
    """Host rule 6. Each partition is (param name, tensor shape, tile shape, declared tile
    shape). All partitions must have the declared tile shape and the same tile grid; returns
    that grid (x = dim 0). With `grid` != (0, 0, 0), it must equal the partition grid. Raises
    LaunchError."""

# -- DLPack capsules (rust/cutile-py/src/dlpack.rs; the rules are in cutile.runtime.interop) --

@final
class DLPackTensor:
    """A tensor taken from a producer's DLPack capsule. The producer's memory stays valid
    while this object lives; its deleter runs when it dies."""

    data: int  # the data pointer as given (byte_offset not added)
    byte_offset: int
    device: tuple[int, int]  # (DLDeviceType, device id)
    dtype: tuple[int, int, int]  # (DLDataTypeCode, bits, lanes)
    shape: list[int]
    strides: list[int] | None  # in elements; None: a legacy producer's row-major
    flags: int  # DLPACK_FLAG_BITMASK_*; 0 from a legacy capsule
    version: tuple[int, int] | None  # None for a legacy `dltensor` capsule

def dlpack_take(capsule: object) -> DLPackTensor:
    """Take the tensor out of an unused `dltensor` / `dltensor_versioned` capsule (renamed
    `used_*`). Raises ValueError for anything else, and for a DLPack major version other
    than 1 (after calling that tensor's deleter)."""

def dlpack_capsule(
    owner: object,
    data: int,
    device: tuple[int, int],
    dtype: tuple[int, int, int],
    shape: Sequence[int],
    strides: Sequence[int],
    byte_offset: int,
    flags: int,
    versioned: bool,
) -> object:
    """A new `dltensor_versioned` (DLPack 1.1, with `flags`) or legacy `dltensor` capsule
    (flags must be 0) over `data`. `owner` lives until the consumer calls the deleter, or
    until the capsule dies untaken."""

# -- the native launch path (rust/cutile-py/src/launch.rs over cutile_host::launch_plan) ------

def next_op_id() -> int:
    """A fresh operation id (also the op's ledger token), process-wide."""

@disjoint_base
class HandleMeta:
    """Native base class of `Tensor` and `Partition`, made in one call: it registers the
    view with the process's host registry (or owns the `handle` given), keeps what Python
    and the launcher read, and releases the handle when the object dies. With no
    arguments, an empty handle that `_init_meta` describes (tests)."""

    def __new__(
        cls,
        alloc: Any = None,
        storage: int = 0,
        offset: int = 0,
        shape: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        dtype: Any = None,
        handle: int | None = None,
        tile_shape: Sequence[int] | None = None,
        num_blocks: int | None = None,
    ) -> Self:
        """A view of `alloc` (whose `address` is its byte 0, `device` its device) of
        registry storage `storage`: `offset` bytes in, `shape` and `strides` in elements
        (strides None: row-major), `dtype` a `cutile.dtypes.DType`; a partition when
        `tile_shape` is given. Raises BorrowError for a view outside its storage,
        ValueError for an inconsistent layout."""
    def _init_meta(
        self,
        storage: int,
        handle: int,
        address: int,
        offset: int,
        shape: Sequence[int],
        strides: Sequence[int],
        dtype: str,
        itemsize: int,
        tile_shape: Sequence[int] | None = None,
        num_blocks: int | None = None,
        registry: HostRegistry | None = None,
        device: int = 0,
    ) -> int:
        """Set the metadata (once) and return the handle. With `registry`, the object owns
        the handle (released when it dies; `handle=0` makes a new one for this view).
        The facts: registry storage and handle ids, the address of element
        [0, ...] (device pointer on the GPU), byte offset in the storage, layout in
        elements, dtype name, and for a partition its tile shape and `num_blocks`. Raises
        ValueError for an inconsistent layout, RuntimeError when set twice."""

    @property
    def _meta(self) -> tuple[int, int, int, int, int, int] | None:
        """(storage, handle, address, span_lo, span_hi, index_bits), None before init."""
    @property
    def _alloc(self) -> Any: ...
    @property
    def _storage(self) -> int: ...
    @property
    def _handle(self) -> int: ...
    @property
    def _offset(self) -> int: ...
    @property
    def address(self) -> int: ...
    @property
    def device(self) -> int:
        """The ordinal of the device whose memory this is."""
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def tile_shape(self) -> tuple[int, ...]:
        """A partition's tile shape (AttributeError for a tensor)."""
    @property
    def num_blocks(self) -> int | None:
        """A partition's block count, None when not given (AttributeError for a tensor)."""
    def _span_bytes(self) -> tuple[int, int]:
        """Lowest and one-past-highest byte the view touches, relative to the allocation."""

class SlowPath(Exception):
    """`KernelOp(...)` did not take the call: the Python binder decides (it raises the
    exact error, or normalizes the arguments and constructs again)."""

@final
class KernelOp(DeviceOp):
    """One launch, and the op a kernel call returns (`cutile.KernelOp`; at run time a
    registered virtual subclass of `DeviceOp`, whose `_claim`, `then` and `await` it
    reuses): from construction (arguments matched, checked and moved in) until it hands its
    arguments back. Dropped after it ran or started, it waits for the device (if it
    launched) and gives everything back; dropped before anything ran it, its tensors stay
    unusable (BorrowError CT5009) and it warns (`OpNeverRunWarning`, at `call_site`) unless
    a composite op adopted it."""

    def __new__(
        cls,
        launcher: KernelLauncher,
        args: tuple[object, ...],
        kwargs: Mapping[str, object] | None = None,
        last_word: bool = False,
        call_site: tuple[str, int] | None = None,
    ) -> Self:
        """Place positional and keyword arguments, infer Consts, check every argument, key
        the specialization, decide the grid (host rule 6, persistent as the facts say) and
        evaluate the launch predicates (fail closed), and move the handles in (rule 3).
        Every refusal raises its typed error (LaunchError, BorrowError); SlowPath only
        where an argument needs normalizing first (a numpy scalar), never with
        `last_word`. `call_site`: the program's `(file, line)` (default: the calling
        frame's)."""

    @property
    def op_id(self) -> int: ...
    @property
    def call_site(self) -> tuple[str, int] | None:
        """`(file, line)` of the call that made the op."""
    def _adopt(self) -> None:
        """A composite op (`zip`, `then`) took this one over and warns for it."""
    @property
    def name(self) -> str:
        """"`kernel` (op #id)", as errors name the op."""
    @property
    def kernel(self) -> Any:
        """The kernel object that made this op."""
    @property
    def binding(self) -> Any:
        """The launch's parameters, values, Consts, specialization and grid
        (`cutile.kernel.op_binding`)."""
    @property
    def specialization(self) -> tuple[list[tuple[str, Any]], list[tuple[Any, ...]], int]:
        """`(consts, tensor facts, index bits)`: what the launch compiles for."""
    @property
    def _launcher(self) -> KernelLauncher: ...
    @property
    def grid(self) -> tuple[int, int, int]: ...
    @property
    def device(self) -> int:
        """The device the launch runs on (that of its tensors)."""
    @property
    def values(self) -> tuple[object, ...]:
        """The arguments in parameter order (scalars normalized to their parameter type)."""
    @property
    def consts(self) -> list[tuple[str, int | float | bool]]:
        """Every Const (given or inferred), sorted by name."""
    @property
    def holding(self) -> bool:
        """Whether the arguments are still moved in."""
    @property
    def _ran(self) -> bool:
        """`DeviceOp`'s "already ran" flag."""
    @_ran.setter
    def _ran(self, value: bool) -> None: ...
    def _claim(self) -> None:
        """Mark as run; BorrowError CT5020 (from `DeviceOp._claim`) if it already ran."""
    def _start(self) -> Callable[[], None]:
        """Compile on a miss, order after conflicting work on other streams (events;
        BorrowError CT5008 / CT5060 where that cannot be), launch on the runtime's stream
        (GPU) or run now (interpreter), record the ledger ranges; returns the waiter (called,
        it waits for the launch; it does not keep the op alive). On failure everything is
        given back."""
    def _wait(self) -> None:
        """Block (without the GIL) until the launch completed."""
    def _done(self) -> bool:
        """Whether the launch completed (never blocks)."""
    def _hand_back(self) -> tuple[object, ...]:
        """After `_start`: hand the arguments back now; the ledger orders what touches
        them next after the launch."""
    @property
    def _position(self) -> tuple[int, int] | None:
        """(stream slot, position) of the launch."""
    def _finish(self) -> Any:
        """Hand the arguments back and return them."""
    def _give_back(self) -> None:
        """Release and hand back without returning (idempotent)."""
    def sync(self) -> Any:
        """Claim (an op runs once), then start + wait + finish; on failure everything is
        given back and the error raised."""
    def _run(self) -> tuple[object, ...]:
        """start + wait + finish, without the runs-once flag."""
    def then(self, f: Callable[..., Any]) -> DeviceOp:
        """`DeviceOp.then`, taken in Rust."""
    def submit(self, stream: Any = None) -> Any:
        """`DeviceOp.submit`: start now, return a `Submitted` handle."""
    def sync_on(self, stream: Any) -> Any:
        """`DeviceOp.sync_on`: run on `stream` and wait."""
    def on(self, stream: Any) -> DeviceOp:
        """`DeviceOp.on`: this op, started on `stream`."""

@disjoint_base
class KernelBase:
    """Native base of `cutile.kernel.EntryKernel`: `__call__` takes the fast path in Rust
    and hands anything else to the subclass's `_call_checked(args, kwargs)`."""

    def __new__(cls, *_args: object, **_kwargs: object) -> Self: ...
    @property
    def _launcher(self) -> KernelLauncher | None:
        """The launcher (None before the first call or after `invalidate_launchers`)."""
    @_launcher.setter
    def _launcher(self, launcher: KernelLauncher | None) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> KernelOp: ...

def invalidate_launchers() -> None:
    """Every kernel builds a new launcher on its next call (the driver state changed)."""

def thread_device() -> int:
    """The current device: this thread's (`set_thread_device`), else the default."""

def set_thread_device(device: int | None = None) -> int | None:
    """Set this thread's device (None: the default); returns the previous setting."""

def set_default_device(device: int) -> int:
    """Set the process's default device; returns the previous."""

@final
class KernelLauncher:
    """A kernel's launch plan, prepared once; `KernelOp(launcher, args, kwargs)` is the
    per-call fast path."""

    def __new__(
        cls,
        kernel: str,
        params: Sequence[tuple[str, str, str | None, Sequence[int | str]]],
        consts: Sequence[tuple[str, str]],
        checked: CheckResult,
        unchecked: bool,
        sm_counts: Sequence[int],
        registry: HostRegistry,
        runtime: Runtime,
        owner: object,
        compile: object,
        interpret: object,
        cuda_error: object,
    ) -> Self:
        """`params`: (name, kind, dtype, declared dims) of each non-Const parameter;
        `consts`: (name, "int" | "float" | "bool"); `checked`: the accepted kernel's
        `CheckResult`, whose facts (persistent outputs, launch predicates) the launcher
        reads in Rust (`unchecked`: launch it even though the checker rejected it: tests
        that replay counterexamples only); `owner`: a weakref to the kernel; `compile`: a
        WeakMethod to
        `(consts, facts, index_bits, device) -> (runnable, CUfunction address, [(kind, param index,
        axis, struct format, offset)], size)`; `interpret`: `(runnable, grid, names,
        values) -> None`; `cuda_error`: `(CUresult, what) -> NoReturn`; `runtime`: the
        streams, ledger and driver launches go through (GPU or interpreter)."""

    @property
    def kernel(self) -> Any:
        """The kernel object (None once it is gone)."""

    def prepare(
        self, args: tuple[object, ...], kwargs: Mapping[str, object] | None = None,
        last_word: bool = False,
    ) -> KernelOp | None:
        """`KernelOp(self, args, kwargs, last_word)`, or None where that raises SlowPath."""

    def __len__(self) -> int:
        """Compiled kernels registered so far."""
