"""`@cutile.entry` kernels and `@cutile.device` functions, and the op a kernel call returns."""

from __future__ import annotations

import struct
import threading
import types
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

from . import _native, dump, environment, log, pipeline
from .errors import ConfigError, CutileError
from .frontend import kast as K
from .frontend.capture import remember_source
from .frontend.to_kast import build_document
from .hints import HintValue, check_opt_level, entry_hints
from .lowering.signature import Specialization, TensorFacts
from .raw_kernel import RawKernel, raw_kernel

if TYPE_CHECKING:
    from .pipeline import CompiledKernel
from .runtime import driver, launch, raw_args, streams
from .runtime.binding import Binding, normalize, specialization
from .runtime.const_args import checked_consts
from .runtime.device_faults import device_error_reporter
from .runtime.device_op import DeviceOp
from .runtime.devices import DeviceScope
from .runtime.interop.kernel_args import import_arguments
from .runtime.ownership import ledger, registry
from .runtime.raw_op import RawOp
from .runtime.unrun_ops import call_site


def _plain_function(fn: Any, decorator: str) -> None:
    """What `@cutile.entry` and `@cutile.device` take: a function written with `def` (its
    source is the kernel). Anything else is CT0004 at the decorator, not an AttributeError
    or an unreadable source at the first check."""
    if isinstance(fn, types.FunctionType):
        return
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    if isinstance(fn, (staticmethod, classmethod)):
        hint = f"put `@{type(fn).__name__}` above `{decorator}` (the kernel is the function)"
    elif getattr(fn, "__cutile_entry__", None) is not None or getattr(
            fn, "__cutile_device__", None) is not None:
        hint = f"`{name}` is already a kernel or device function: decorate it once"
    else:
        hint = "kernels and device functions are Python functions written with `def`"
    raise CutileError(f"`{decorator}` takes a function, not a `{type(fn).__name__}` "
                      f"(`{name}`)", code="CT0004", hint=hint)


class DeviceFunction:
    """A `@cutile.device` helper: inlined into every kernel that calls it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        _plain_function(fn, "@cutile.device")
        remember_source(fn)
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__cutile_device__ = self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise CutileError(
            f"`{self.__name__}` is a `@cutile.device` function; it runs only inside kernels",
            code="CT0010",
        )


class EntryKernel(_native.KernelBase):
    """A `@cutile.entry` kernel. Calling it returns a lazy `DeviceOp` (a `KernelOp`).

    The call itself is native (`_native.KernelBase.__call__`): it matches the arguments,
    checks them and moves them into the op in Rust; what it does not take goes to
    `_call_checked`."""

    # Launch even when the checker rejects the kernel, with no device asserts: only for
    # tests of the race detector and the soundness fuzzer, which replay rejected kernels
    # to show the checker's counterexamples are real (`tests/`, never public API).
    _unchecked = False

    def __init__(self, fn: Callable[..., Any], *, unsafe: bool = False,
                 deny_in_kernel_checks: bool = False, num_ctas: HintValue = None,
                 occupancy: HintValue = None, num_worker_warps: HintValue = None,
                 opt_level: int = 3, pdl: bool = False,
                 pdl_early: tuple[str, ...] = (), fp_contract: bool = False,
                 pdl_trigger_first: bool = False) -> None:
        _plain_function(fn, "@cutile.entry")
        remember_source(fn)
        self.fn = fn
        self.name = fn.__name__
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__cutile_entry__ = self
        self.unsafe = unsafe
        self.options = {"deny_in_kernel_checks": deny_in_kernel_checks}
        # How tileiras compiles it (never what it computes): Tile IR entry hints by target.
        self.hint_args: dict[str, HintValue] = {
            "num_ctas": num_ctas, "occupancy": occupancy, "num_worker_warps": num_worker_warps}
        self.hints = entry_hints(**self.hint_args)
        self.opt_level = check_opt_level(opt_level)
        # Programmatic dependent launch asked for (`pdl_enabled()`: CUTILE_PDL=0 can still
        # turn it off). Like a hint it is part of the kernel's identity; unlike one, the
        # launch depends on it too: the launcher reads it from the compiled kernel.
        self.pdl = check_pdl(pdl)
        # Read-only tensor parameters whose leading loads may run ahead of the PDL wait
        # (`lowering/pdl.py`; checked against the parameters at the first lowering).
        self.pdl_early = check_pdl_early(pdl_early)
        # The next kernel may be scheduled before this one's wait (`lowering/pdl.py`).
        self.pdl_trigger_first = check_pdl_trigger_first(pdl_trigger_first)
        # Products fused into the adds that use them (`lowering/contract.py`): what the
        # kernel computes, rounded once instead of twice, so part of its identity.
        self.fp_contract = check_fp_contract(fp_contract)
        self._doc: K.Document | None = None
        self._kast_hash: str | None = None
        self._check: Any = None
        self._lock = threading.Lock()
        self._lowered: dict[tuple[Specialization, bool], Any] = {}
        # by backend too: a program (or a test) may switch to the interpreter and back; by
        # device on the GPU (a CUfunction belongs to one device's context)
        self._loaded: dict[tuple[str, int, Specialization, bool], Any] = {}

    def __repr__(self) -> str:
        return f"<cutile.entry {self.__qualname__}>"

    def with_hints(self, *, num_ctas: HintValue = None, occupancy: HintValue = None,
                   num_worker_warps: HintValue = None, opt_level: int | None = None,
                   pdl: bool | None = None, pdl_early: tuple[str, ...] | None = None,
                   fp_contract: bool | None = None,
                   pdl_trigger_first: bool | None = None) -> EntryKernel:
        """The same kernel compiled with other hints or with(out) programmatic dependent
        launch (the ones given replace this kernel's; the body and its proof are the same,
        and what its launches compute too, but for `fp_contract`'s rounding).
        `pdl_early`: read-only tensor parameters whose loads that come first may run ahead
        of the PDL wait; `pdl_trigger_first`: the next kernel may be scheduled before this
        one's wait (docs/pdl.md)."""
        args = dict(self.hint_args)
        for name, value in (("num_ctas", num_ctas), ("occupancy", occupancy),
                            ("num_worker_warps", num_worker_warps)):
            if value is not None:
                args[name] = value
        return EntryKernel(self.fn, unsafe=self.unsafe,
                           deny_in_kernel_checks=self.options["deny_in_kernel_checks"],
                           opt_level=self.opt_level if opt_level is None else opt_level,
                           pdl=self.pdl if pdl is None else pdl,
                           pdl_early=self.pdl_early if pdl_early is None else pdl_early,
                           fp_contract=self.fp_contract if fp_contract is None else fp_contract,
                           pdl_trigger_first=(self.pdl_trigger_first if pdl_trigger_first
                                              is None else pdl_trigger_first),
                           **args)

    # -- static stages ---------------------------------------------------------------------

    def document(self) -> K.Document:
        """The kernel AST (docs/kernel-ast.md); CT0xxx errors surface here."""
        if self._doc is None:
            self._doc = build_document(self.fn, self.name, self.unsafe, self.options)
        return self._doc

    def kast_json(self) -> str:
        return self.document().to_json()

    def check(self) -> Any:
        """Run the static checker alone (no GPU needed); raises KernelCheckError."""
        if self._check is None:
            self._check = pipeline.run_checker(self.document(), raise_errors=not self._unchecked)
        return self._check

    def check_report(self) -> list[Any]:
        """Every safety obligation of the kernel and how it was discharged."""
        return list(self.check().obligations)

    @property
    def entry(self) -> K.Function:
        return self.document().function(self.name)

    # -- compilation -----------------------------------------------------------------------

    def specialization(self, consts: dict[str, Any]) -> Specialization:
        """Facts for an ahead-of-time build, those of typical launches: tensors 16-byte
        aligned, unit last stride, extents and strides multiples of 16. (A launch always
        builds from its own arguments' facts; this only shapes what `compile()` shows.)"""
        entry = self.entry
        values = checked_consts(self.name, entry.params, consts)
        facts = []
        for p in entry.params:
            if p.kind in ("tensor", "mut_tensor", "atomic_tensor"):
                rank = len(p.shape or [])
                assert p.dtype is not None
                facts.append((p.name, TensorFacts(p.dtype, rank, True, True, (16,) * rank,
                                                  (16,) * (rank - 1) + (1,))))
        return Specialization(tuple(sorted(values.items())), tuple(facts), 32)

    def pdl_enabled(self) -> bool:
        """Whether a specialization compiled now gets programmatic dependent launch: asked
        for with `pdl=True` and not turned off by CUTILE_PDL=0 (read at each compile)."""
        return self.pdl and pdl_allowed()

    def lowered(self, spec: Specialization) -> Any:
        pdl = self.pdl_enabled()
        got = self._lowered.get((spec, pdl))
        if got is None:
            self.check()
            from .lowering.facts import LoweringFacts

            facts = None if self._unchecked else LoweringFacts.of(self.check())
            got = pipeline.lower(self.document(), spec, facts, pdl, self._early_params(),
                                 self.fp_contract, self.pdl_trigger_first)
            got.module.functions[0].hints = self.hints
            dump.after_lowering(self._identity(spec, pdl), self.kast_json, self.check(),
                                got)
            self._lowered[(spec, pdl)] = got
        return got

    def compile(self, target: str = "sm_90", opt_level: int = 3, **consts: Any
                ) -> CompiledKernel:
        """Build the cubin for `target` without a GPU (needs tileiras)."""
        spec = self.specialization(consts)
        lowered = self.lowered(spec)
        return pipeline.assemble(lowered, target, opt_level,
                                 self._identity(spec, lowered.pdl))

    def identity(self, spec: Specialization) -> dict[str, Any]:
        """What one specialization of this kernel is (`pipeline.kernel_identity`), as it
        would be compiled now."""
        return self._identity(spec, self.pdl_enabled())

    def _identity(self, spec: Specialization, pdl: bool) -> dict[str, Any]:
        if self._kast_hash is None:
            self._kast_hash = pipeline.kast_sha256(self.document())
        return pipeline.kernel_identity(self.name, self._kast_hash, spec, self.hints,
                                        self.opt_level, pdl, self.pdl_early,
                                        self.fp_contract, self._unchecked,
                                        self.pdl_trigger_first)

    def _early_params(self) -> tuple[str, ...]:
        """`pdl_early`, each name checked to be a read-only tensor parameter (ConfigError
        CT8020): only bytes the kernel never writes may be read ahead of the wait."""
        kinds = {p.name: p.kind for p in self.entry.params}
        for name in self.pdl_early:
            if kinds.get(name) != "tensor":
                what = (f"a `{kinds[name]}` parameter" if name in kinds
                        else "not a parameter")
                raise ConfigError(
                    f"`pdl_early` names `{name}` of `{self.name}`, {what}", code="CT8020",
                    hint="`pdl_early` takes read-only tensor parameters (`Tensor[...]`, not "
                         "`Mut`, `Atomic`, scalars or pointers): loads of them may run "
                         "before the previous kernel completed")
        return self.pdl_early

    def _runnable(self, spec: Specialization, device: int | None = None) -> Any:
        """The kernel of `spec`, loaded in `device`'s context (default: the current
        device; a CUfunction belongs to one context), or lowered for the interpreter."""
        backend = driver.backend()
        dev = driver.state().device if device is None else device
        pdl = self.pdl_enabled()
        key = (backend, dev if backend == "gpu" else 0, spec, pdl)
        got = self._loaded.get(key)
        if got is not None:
            return got
        with self._lock:
            got = self._loaded.get(key)
            if got is None:
                if backend == "gpu":
                    got = self._load_for_gpu(spec, dev, pdl)
                else:
                    lowered = self.lowered(spec)
                    dump.interpreted(self._identity(spec, lowered.pdl), lowered)
                    got = lowered
                self._loaded[key] = got
        return got

    def _load_for_gpu(self, spec: Specialization, device: int, pdl: bool) -> Any:
        """The cubin of a checked specialization, loaded on `device`: straight from the
        launch cache when this kernel was assembled for the device's arch before (no
        lowering, no bytecode: the first launch of a cached kernel in a fresh process, or
        on a second GPU of the same kind), else lowered and assembled, and stored there for
        the next process. Dumps, when asked for, need the lowering: no shortcut."""
        from .backend import launch_cache
        from .runtime.launch import LoadedKernel

        identity = self._identity(spec, pdl)
        arch = driver.arch(device)
        shortcut = not dump.requested()
        if shortcut:
            hit = launch_cache.load(identity, arch)
            if hit is not None and self._fits(hit, pdl):
                return LoadedKernel(hit.cubin, hit.entry_name, hit.abi, hit.pdl, device,
                                    hit.pdl_early)
        lowered = self.lowered(spec)
        compiled = pipeline.assemble(lowered, arch, self.opt_level, identity=identity)
        if shortcut:
            try:
                launch_cache.store(identity, arch, self.opt_level, launch_cache.LaunchEntry(
                    compiled.cubin, lowered.entry_name, lowered.abi, lowered.pdl,
                    lowered.pdl_early))
            except Exception as exc:  # the launch cache is an optimization: never fatal
                log.get("cache").debug("launch cache not written: %s", exc)
        # The launch attribute follows the compiled kernel, never a second reading of the
        # option: only a kernel with the PDL prologue is launched with it.
        return LoadedKernel(compiled.cubin, lowered.entry_name, lowered.abi, lowered.pdl,
                            device, lowered.pdl_early)

    def _fits(self, hit: Any, pdl: bool) -> bool:
        """A launch-cache entry's own claims agree with this kernel: its entry symbol, its
        parameters and whether it carries the PDL prologue (launched with the attribute
        otherwise, a kernel without the wait would race the one before it). The entry's
        digest proves only that it is intact, not who wrote it."""
        params = {p.name for p in self.runtime_params}
        early = set(self.pdl_early) if pdl else set()
        fits = (hit.entry_name == self.name and hit.pdl == pdl
                and set(hit.pdl_early) <= early
                and all(s.param in params for s in hit.abi.slots))
        if not fits:
            log.get("cache").warning("launch-cache entry for `%s` does not match the kernel; "
                                     "recompiling", self.name)
        return fits

    # -- launching -------------------------------------------------------------------------

    def _make_launcher(self) -> Any:
        """The native launcher, prepared once (per backend) from the parameters and the
        checker's facts (launch kind, launch predicates), which it reads in Rust."""
        checked = self.check()
        entry = self.entry
        # each device's multiprocessors (read from its attributes: no context is made)
        sms = [driver.device_info(i).sm_count or 132 for i in range(driver.device_count())]
        launcher = _native.KernelLauncher(
            self.name,
            [(p.name, p.kind, p.dtype, list(p.shape or [])) for p in self.runtime_params],
            [(p.name, p.dtype or "int") for p in entry.params if p.kind == "const"],
            checked,
            self._unchecked,
            sms,
            registry(),
            ledger(),
            weakref.ref(self),
            weakref.WeakMethod(self._native_kernel),
            _interpret,
            device_error_reporter(weakref.ref(self)),
        )
        self._launcher = launcher
        return launcher

    @property
    def runtime_params(self) -> list[K.Param]:
        """The parameters a launch passes (every one but the `Const`s), in order."""
        return [p for p in self.entry.params if p.kind != "const"]

    def _call_checked(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> KernelOp:
        """A call the native fast path did not take: build the launcher on the first call,
        normalize argument values the native binder cannot read (numpy scalars), and bind
        again with the last word: the launch, or its typed error."""
        kwargs = kwargs or {}
        site = call_site()  # the program's line, not this one (the op's warning names it)
        launcher = self._launcher
        if launcher is None:
            launcher = self._make_launcher()
            try:
                return KernelOp(launcher, args, kwargs, False, site)
            except _native.SlowPath:
                pass
        args = tuple(normalize(a) for a in args)
        kwargs = {k: normalize(v) for k, v in kwargs.items()}
        # Another library's tensors for read-only parameters are imported shared.
        args, kwargs = import_arguments(self.name, self.runtime_params, args, kwargs)
        return KernelOp(launcher, args, kwargs, True, site)

    def _native_kernel(self, consts: list[tuple[str, Any]], facts: list[tuple[Any, ...]],
                       index_bits: int, device: int = 0
                       ) -> tuple[Any, int, list[tuple[Any, ...]], int, bool, list[int]]:
        """Compile (or find) the kernel for a specialization the native launcher has not
        seen on `device`: `(runnable, CUfunction address, ABI slots with offsets, buffer
        size, pdl, early)`, `pdl` read from the compiled kernel (its launches carry the PDL
        attribute) and `early` the runtime parameters it loads ahead of the PDL wait (by
        index: the launcher gives the attribute only while nothing in flight may write
        them), read from the compiled kernel too."""
        runnable = self._runnable(specialization(consts, facts, index_bits), device)
        index = {p.name: i for i, p in enumerate(self.runtime_params)}
        early = [index[n] for n in runnable.pdl_early]
        gpu = driver.backend() == "gpu"
        if not gpu and not streams.runtime().gpu:
            return runnable, 0, [], 0, bool(runnable.pdl), early  # the interpreter runs it
        # A GPU launch packs its parameters. So does one on the null driver's runtime (the
        # GPU code path without a GPU: `runtime.null_gpu`), which launches the lowered
        # kernel as the GPU would (no CUfunction: the null driver runs nothing), so that
        # its benchmarks and tests measure the same host work per launch.
        abi = runnable.abi
        slots = [(s.kind, index[s.param], s.axis, s.fmt, off)
                 for s, off in zip(abi.slots, abi.offsets(), strict=True)]
        function = int(runnable._fn) if gpu else 0
        return (runnable, function, slots, struct.calcsize(abi.struct_format),
                bool(runnable.pdl), early)


def check_pdl_early(names: Any) -> tuple[str, ...]:
    if (not isinstance(names, tuple | list)
            or not all(isinstance(n, str) and n.isidentifier() for n in names)):
        raise ConfigError(f"`pdl_early={names!r}` is not a tuple of parameter names",
                          code="CT8020",
                          hint="e.g. `pdl_early=(\"w\",)`: the read-only tensor parameters "
                               "whose first loads may run ahead of the PDL wait")
    return tuple(names)


def check_flag(option: str, value: Any, hint: str) -> bool:
    """An on/off option of `@cutile.entry`: True or False, else ConfigError CT8020."""
    if not isinstance(value, bool):
        raise ConfigError(f"`{option}={value!r}` is not True or False", code="CT8020",
                          hint=hint)
    return value


def check_pdl(pdl: Any) -> bool:
    return check_flag("pdl", pdl, "`@cutile.entry(pdl=True)` launches the kernel with "
                                  "programmatic dependent launch; the default is False")


def check_pdl_trigger_first(first: Any) -> bool:
    return check_flag("pdl_trigger_first", first,
                      "`@cutile.entry(pdl=True, pdl_trigger_first=True)` lets the next kernel "
                      "be scheduled before this one's wait; the default is False")


def check_fp_contract(fp_contract: Any) -> bool:
    return check_flag("fp_contract", fp_contract,
                      "`@cutile.entry(fp_contract=True)` fuses each product into the add "
                      "that uses it (one rounding); the default is False")


def pdl_allowed() -> bool:
    """CUTILE_PDL: `0` turns programmatic dependent launch off for every kernel; `1` or
    unset leaves it to each kernel's `pdl=` (anything else is a ConfigError, CT8008)."""
    return environment.choice("CUTILE_PDL", _PDL_WORDS, "CT8008") != "0"


_PDL_WORDS = {"0": "0", "off": "0", "false": "0", "no": "0",
              "1": "1", "on": "1", "true": "1", "yes": "1"}


def _interpret(runnable: Any, grid: tuple[int, int, int], names: tuple[str, ...],
               values: tuple[Any, ...]) -> None:
    """Run a launch on the CPU interpreter (the native launcher calls this from `wait`)."""
    launch.interpret(runnable.module, runnable.entry_name, runnable.abi, grid, names, values)


# One launch of a kernel: its tensors are moved in when it is created and handed back by
# `.sync()` / `await`. Dropped after it ran or started, it waits for the device (if it
# launched) and hands them back; dropped before anything ran it, it warns
# (`OpNeverRunWarning`) and its tensors stay unusable (BorrowError CT5009). Native
# (`rust/cutile-py/src/launch.rs`), a virtual subclass of DeviceOp.
KernelOp = _native.KernelOp
DeviceOp.register(KernelOp)


def op_binding(op: KernelOp) -> Binding:
    """A launch's parameters, values, Consts, specialization and grid, as the native binder
    decided them."""
    kernel = op.kernel
    return Binding(kernel.name, kernel.runtime_params, list(op.values), dict(op.consts),
                   specialization(*op.specialization), op.grid)


@overload
def entry(fn: Callable[..., Any], /) -> EntryKernel: ...
@overload
def entry(
    *, unsafe: bool = False, deny_in_kernel_checks: bool = False, num_ctas: HintValue = None,
    occupancy: HintValue = None, num_worker_warps: HintValue = None, opt_level: int = 3,
    pdl: bool = False, pdl_early: tuple[str, ...] = (), fp_contract: bool = False,
    pdl_trigger_first: bool = False,
) -> Callable[[Callable[..., Any]], EntryKernel]: ...


def entry(
    fn: Callable[..., Any] | None = None, /, *, unsafe: bool = False,
    deny_in_kernel_checks: bool = False, num_ctas: HintValue = None,
    occupancy: HintValue = None, num_worker_warps: HintValue = None, opt_level: int = 3,
    pdl: bool = False, pdl_early: tuple[str, ...] = (), fp_contract: bool = False,
    pdl_trigger_first: bool = False,
) -> Any:
    """Mark a kernel: `@cutile.entry`, `@cutile.entry(unsafe=True)`, or with compiler hints
    (`num_ctas`, `occupancy`, `num_worker_warps`: an int or `cutile.ByTarget(...)`;
    `opt_level` 0-3), which change how tileiras compiles it, never what it computes.

    `pdl=True`: programmatic dependent launch (Hopper and newer, Tile IR bytecode 13.4):
    the kernel is launched so that its blocks may start while the kernel before it on the
    stream finishes, and waits for that kernel's completion before its first memory access
    (docs/pdl.md). What it computes is unchanged; CUTILE_PDL=0 turns it off everywhere.
    `pdl_early=("w", ...)`: loads of these read-only tensor parameters that come before
    any other memory access run ahead of that wait (a GEMV's first weight tiles stream in
    while the previous kernel finishes); such a launch gets the PDL attribute only while
    no work in flight may write them. `pdl_trigger_first=True`: the next PDL kernel may be
    scheduled as soon as this one's blocks start, not after its wait, so that the next
    kernel's early loads also overlap this kernel's predecessor (for a short kernel
    followed by one with early loads; three grids of a chain may then be on the GPU).

    `fp_contract=True`: each float product that only an add or a subtract uses is fused
    into it, one `fma` rounded once (as nvcc's `-fmad=true` and Triton do; tileiras keeps
    them apart): fewer instructions, results that may differ in the last bit."""
    if fn is not None:
        return EntryKernel(fn)
    hints = {"num_ctas": num_ctas, "occupancy": occupancy, "num_worker_warps": num_worker_warps}
    entry_hints(**hints)  # a bad hint is an error at the decorator, not at the first launch
    check_opt_level(opt_level)
    check_pdl(pdl)
    check_pdl_early(pdl_early)
    check_fp_contract(fp_contract)
    check_pdl_trigger_first(pdl_trigger_first)

    def wrap(f: Callable[..., Any]) -> EntryKernel:
        return EntryKernel(f, unsafe=unsafe, deny_in_kernel_checks=deny_in_kernel_checks,
                           opt_level=opt_level, pdl=pdl, pdl_early=pdl_early,
                           fp_contract=fp_contract, pdl_trigger_first=pdl_trigger_first,
                           **hints)

    return wrap


@overload
def device(fn: Callable[..., Any], /) -> DeviceFunction: ...
@overload
def device(fn: int, /) -> DeviceScope: ...
def device(fn: Any, /) -> DeviceFunction | DeviceScope:
    """`@cutile.device` on a function marks a device function (always inlined into the
    kernels that call it). `with cutile.device(i):` on a device ordinal makes device `i`
    this thread's current device for the block: allocations and launches without tensors
    go there (TensorError CT5036 for a device there is not)."""
    if callable(fn):
        return DeviceFunction(fn)
    return DeviceScope(fn)


class _UnsafeBlock:
    """`with cutile.unsafe():` inside a kernel opens an unsafe block (checked statically).
    Outside kernels, `cutile.unsafe` holds what cutile cannot check: `raw_kernel` (CUDA C++
    compiled by NVRTC) and its parameter declarations `read`, `write`, `atomic`, `scalar`.
    On the host, `cutile.unsafe.from_dlpack_exclusive(obj)` is the one unsafe import of
    another library's memory."""

    __cutile_unsafe__ = True
    raw_kernel = staticmethod(raw_kernel)
    RawKernel = RawKernel
    RawOp = RawOp
    read = staticmethod(raw_args.read)
    write = staticmethod(raw_args.write)
    atomic = staticmethod(raw_args.atomic)
    scalar = staticmethod(raw_args.scalar)

    def __call__(self) -> Any:
        raise CutileError("`cutile.unsafe()` is only meaningful inside a kernel body",
                          code="CT0010")

    @staticmethod
    def from_dlpack_exclusive(obj: Any) -> Any:
        """Import another library's tensor without copying, writable: a cutile tensor a
        kernel may write (`.partition(...)` makes it an output), over the same memory.

        Unsafe: the caller promises that nothing else reads or writes that memory (no
        other library, stream or thread, no other view) from this call until the cutile
        tensor and every op holding it are gone. cutile cannot check that promise; it
        checks what it can (docs/interop.md): the producer did not mark the memory
        read-only or copy it (CT5046), no other live import or export views those bytes
        (CT5047), and no two elements share an address (CT5044)."""
        from .runtime.interop import importing

        return importing.from_dlpack_exclusive(obj)


unsafe = _UnsafeBlock()
