"""`cutile.autotune`: run a kernel with the fastest of several configs, chosen once per
device and shape class and cached on disk.

    @cutile.autotune(configs=[cutile.Config({"BM": 64, "BN": 64, "BK": 32}),
                              cutile.Config({"BM": 128, "BN": 128, "BK": 64}, occupancy=2)],
                     key=["x", "y"])
    @cutile.entry
    def matmul(z: Mut[Tensor[f32, ["BM", "BN"]]], x: ..., y: ..., BM: Const[int], ...): ...

    z, x, y = matmul(api.zeros([m, n], f32), x, y).sync()  # z passed whole, comes back whole

A call whose shape class (the `key` arguments' dtypes and extents rounded up to powers of
two, and the Consts given at the call) has no choice yet tries every config: checked with
its Consts (the lowering's shape and type rules), bound to the arguments (launch rules),
compiled, and on the GPU timed with CUDA events on copies of the outputs (and of the
`Atomic` and `Ptr` arguments). Candidates that fail are skipped with the reason logged
(`cutile.autotune`); the fastest one is kept in memory and on disk (`store`). The
interpreter cannot time kernels: it takes the first valid config and says so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import environment, log
from .._version import __version__
from ..backend import tileiras
from ..errors import (
    AutotuneError,
    CompileError,
    ConfigError,
    CutileError,
    DeviceError,
    KernelCheckError,
    LaunchError,
)
from ..frontend import kast as K
from ..hints import ByTarget
from ..kernel import EntryKernel
from ..runtime import devices, driver
from ..runtime.device_op import DeviceOp
from ..runtime.interop.kernel_args import import_arguments
from ..runtime.tensor import Partition, Tensor, _Handle
from ..runtime.unrun_ops import call_site
from . import bench, store
from .config import Config

_log = log.get("autotune")
MODES = {"1": "on", "on": "on", "true": "on", "yes": "on",
         "0": "off", "off": "off", "false": "off", "no": "off", "retune": "retune"}
KeySpec = Sequence[str] | Callable[..., Any] | None
EXACT_KEPT = 1024  # choices for exact arguments (`Autotuned._fallback`) kept at most


def mode() -> str:
    """`CUTILE_AUTOTUNE`: "on" (default), "off" or "retune" (CT8023 for anything else)."""
    return environment.choice("CUTILE_AUTOTUNE", MODES, "CT8023") or "on"


@dataclass(frozen=True)
class Choice:
    """The config an autotuned kernel runs for one shape class, and how it was chosen:
    `how` is "benchmarked", "first valid" (the interpreter, or `CUTILE_AUTOTUNE=0`) or
    "cached" (read from disk); `times` are seconds per launch by config index (benchmarked
    ones only); `skipped` lists the configs that failed, with their error code and reason."""

    config: Config
    index: int
    how: str
    times: dict[int, float] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "config": self.config.to_json(), "how": self.how,
                "times_us": {str(i): round(t * 1e6, 3)
                             for i, t in sorted(self.times.items())},
                "skipped": self.skipped, "tuned_at": time.time()}


class TunedOp(DeviceOp):
    """What calling an autotuned kernel returns: the chosen kernel's op (`kernel_op`),
    handing back whole the outputs the caller passed whole (unpartitioned)."""

    def __init__(self, op: Any, whole: Sequence[int], choice: Choice,
                 cut: Sequence[tuple[Tensor, Partition]] = ()) -> None:
        self.kernel_op = op
        self.choice = choice
        self.config = choice.config
        self._whole = tuple(whole)
        # (the caller's whole output, the partition of it the op took): an op that fails
        # to start makes the caller's tensor live again, not only the partition
        self._cut = tuple(cut)
        self._name = op.name
        self._site = call_site()
        op._adopt()

    def __repr__(self) -> str:
        return f"<cutile.TunedOp {self._name} with {self.config!r}>"

    @property
    def binding(self) -> Any:
        """The chosen kernel's launch: parameters, values, Consts and grid."""
        return self.kernel_op.binding

    def _inner(self) -> tuple[Any, ...]:
        return (self.kernel_op,)

    def _start(self) -> Callable[[], None]:
        self.kernel_op._claim()
        try:
            wait: Callable[[], None] = self.kernel_op._start()
        except BaseException:
            # The op gave its partitions back and launched nothing: the caller's tensors
            # are live again (an error the caller can fix, e.g. a closed stream, does not
            # cost them their outputs).
            _restore(self._cut, "a launch that failed to start")
            raise
        return wait

    def _finish(self) -> Any:
        return self._whole_again(self.kernel_op._finish())

    def _hand_back(self) -> Any:
        return self._whole_again(self.kernel_op._hand_back())

    def _done(self) -> bool:
        return bool(self.kernel_op._done())

    def _last_slot(self) -> int | None:
        position = self.kernel_op._position
        return None if position is None else int(position[0])

    def _whole_again(self, results: Any) -> tuple[Any, ...]:
        values = list(results)
        for i in self._whole:
            values[i] = values[i].unpartition()
        return tuple(values)


def _pow2(n: int) -> int:
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


def _describe(value: Any) -> Any:
    """A value's part of a shape class: a tensor's dtype and extents rounded up to powers of
    two (a partition's tiles too), a number itself."""
    if isinstance(value, _Handle):
        out: dict[str, Any] = {"dtype": value.dtype.name,
                               "shape": [_pow2(d) for d in value.shape]}
        if isinstance(value, Partition):
            out["tile"] = list(value.tile_shape)
            out["num_blocks"] = value.num_blocks
        return out
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy":
        value = item()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return type(value).__name__


class Autotuned:
    """An `@cutile.entry` kernel that runs with the best of `configs` (`cutile.autotune`).
    Call it like the kernel; `choose(...)` tunes without launching; `choices` holds what
    this process decided; `stats` counts tunings, benchmarks and cache hits."""

    def __init__(self, kernel: EntryKernel, configs: Sequence[Config], key: KeySpec = None,
                 compile_timeout: float | None = None) -> None:
        if not isinstance(kernel, EntryKernel):
            raise ConfigError(
                f"`cutile.autotune` tunes a `@cutile.entry` kernel, got {kernel!r}",
                code="CT8021", hint="stack `@cutile.autotune(...)` above `@cutile.entry`")
        configs = list(configs)
        if not configs or not all(isinstance(c, Config) for c in configs):
            raise ConfigError(f"`cutile.autotune({kernel.name})` needs a non-empty list of "
                              f"`cutile.Config`, got {configs!r}", code="CT8021",
                              hint='e.g. `configs=[cutile.Config({"BM": 64}), '
                              'cutile.Config({"BM": 128})]`')
        if key is not None and not callable(key):
            if isinstance(key, str) or not all(isinstance(k, str) for k in key):
                raise ConfigError(f"`key` is a list of parameter names, got {key!r}",
                                  code="CT8021", hint='e.g. `key=["x", "y"]`')
            key = list(key)
        if compile_timeout is not None and not (
                isinstance(compile_timeout, (int, float)) and not isinstance(compile_timeout, bool)
                and compile_timeout > 0):
            raise ConfigError(f"`compile_timeout` is a number of seconds above 0 (or None), "
                              f"got {compile_timeout!r}", code="CT8021",
                              hint="e.g. `compile_timeout=60`")
        self.kernel = kernel
        self.compile_timeout = None if compile_timeout is None else float(compile_timeout)
        self.configs = configs
        self.key = key
        self.__name__ = kernel.__name__
        self.__qualname__ = kernel.__qualname__
        self.__doc__ = kernel.__doc__
        self.__cutile_entry__ = kernel  # a kernel that calls this one is told it cannot
        self.stats = {"tunings": 0, "benchmarked": 0, "candidates": 0, "disk_hits": 0,
                      "memory_hits": 0}
        self._choices: dict[tuple[bool, int, str], Choice] = {}
        # choices for exactly these arguments, where their class's choice cannot run them
        # (`_fallback`): (the class's memo key, the arguments' exact description) -> choice
        self._exact: dict[tuple[tuple[bool, int, str], str], Choice] = {}
        self._variants: dict[int, EntryKernel] = {}
        # (config index, its Const values) -> the CT7005 of a compile past
        # `compile_timeout`: a later tuning (another shape class) skips it at once rather
        # than wait for tileiras again
        self._too_slow: dict[tuple[int, str], CutileError] = {}
        self._prepared = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<cutile.autotune {self.kernel.__qualname__} over {len(self.configs)} configs>"

    @property
    def choices(self) -> dict[str, Choice]:
        """This process's choices by shape class (JSON text)."""
        return {shape: c for (_, _, shape), c in self._choices.items()}

    # -- the kernel's parameters -----------------------------------------------------------

    def _prepare(self) -> None:
        """Check the kernel (its rules do not depend on Const values) and the search space
        against its parameters, once."""
        if self._prepared:
            return
        checked = self.kernel.check()  # KernelCheckError: no config can fix the body
        params = self.kernel.entry.params
        self._params: list[K.Param] = list(params)
        self._consts = {p.name for p in params if p.kind == "const"}
        self._outputs = [p for p in params if p.kind == "mut_tensor"]
        # What a trial may write (and so gets a scratch copy of): the outputs, and the
        # tensors given for `Atomic` and `Ptr` parameters.
        self._written = [p for p in params if p.kind in ("mut_tensor", "atomic_tensor", "ptr")]
        self._persistent = {name for name, how in checked.outputs if how == "persistent"}
        self._runtime = [p for p in params if p.kind != "const"]
        names = {p.name for p in params}
        for cfg in self.configs:
            unknown = sorted(set(cfg.consts) - self._consts)
            if unknown:
                raise ConfigError(f"{cfg!r} sets `{unknown[0]}`, which is not a Const of "
                                  f"`{self.kernel.name}`", code="CT8021",
                                  hint=f"its Consts: {', '.join(sorted(self._consts))}")
        if isinstance(self.key, list):
            for k in self.key:
                if k not in names:
                    raise ConfigError(f"`key` names `{k}`, which is not a parameter of "
                                      f"`{self.kernel.name}`", code="CT8021",
                                      hint=f"its parameters: {', '.join(sorted(names))}")
        self._tuned: set[str] = set().union(*(c.consts for c in self.configs))
        self._prepared = True

    def _split(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
               ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call's arguments by name: (runtime arguments, Consts given at the call)."""
        if len(args) > len(self._params):
            raise LaunchError(f"`{self.kernel.name}` takes {len(self._params)} arguments, "
                              f"got {len(args)}", code="CT6104", kernel=self.kernel.name)
        named = {p.name: a for p, a in zip(self._params, args, strict=False)}
        for k, v in kwargs.items():
            if k in named:
                raise LaunchError(f"`{self.kernel.name}` got two values for `{k}`",
                                  code="CT6104", kernel=self.kernel.name, tensor=k)
            named[k] = v
        missing = [p.name for p in self._runtime if p.name not in named]
        if missing:
            raise LaunchError(f"`{self.kernel.name}` needs a value for `{missing[0]}`",
                              code="CT6104", kernel=self.kernel.name, tensor=missing[0])
        consts = {k: v for k, v in named.items() if k in self._consts}
        clash = sorted(set(consts) & self._tuned)
        if clash:
            raise ConfigError(f"`{clash[0]}` is tuned by the configs of `{self.kernel.name}`; "
                              f"the call cannot also set it", code="CT8021",
                              hint=f"drop `{clash[0]}=` from the call, or from the configs")
        runtime = {k: v for k, v in named.items() if k not in self._consts}
        # Another library's tensors for read-only parameters are imported shared (as a
        # kernel call does), so shape classes and trials see cutile tensors.
        _, runtime = import_arguments(self.kernel.name, self._runtime, (), runtime)
        return runtime, consts

    def _shape_class(self, runtime: Mapping[str, Any], consts: Mapping[str, Any]) -> str:
        if callable(self.key):
            try:
                part: Any = self.key(**runtime, **consts)
            except Exception as exc:
                raise ConfigError(
                    f"the `key` function of `cutile.autotune({self.kernel.name})` raised "
                    f"{type(exc).__name__}: {exc}", code="CT8021",
                    hint="it is called with every argument by name (`key=lambda **a: ...`) "
                    "and returns JSON-able values") from exc
        else:
            names = self.key if self.key is not None else [
                p.name for p in self._runtime if p.kind in ("tensor", "mut_tensor")]
            part = [[n, _describe(runtime.get(n, consts.get(n)))] for n in names]
        cut = [[p.name, _describe(runtime.get(p.name))] for p in self._outputs
               if isinstance(runtime.get(p.name), Partition)]
        return json.dumps({"key": part, "consts": _describe_consts(consts),
                           "partitions": cut}, sort_keys=True, default=repr)

    # -- calls -----------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> TunedOp:
        """Launch with the chosen config (tuning first if this shape class has none):
        a `DeviceOp` like the kernel's, whose `.sync()` hands back every argument, outputs
        passed whole (a `Tensor`) whole again."""
        self._prepare()
        runtime, consts = self._split(args, kwargs)
        device = self._device_of(runtime)
        with devices.scoped(device if device != devices.current() else None):
            choice = self._choose(runtime, consts, device)
            try:
                return self._launch(choice, runtime, consts)
            except (LaunchError, CompileError, KernelCheckError, ConfigError) as err:
                # The class's choice was checked for other extents of the class (or read
                # from a file): these arguments are bound and compiled anew, and may not
                # fit it. Tune for exactly them rather than fail a call a config can run.
                choice = self._fallback(choice, err, runtime, consts, device)
                return self._launch(choice, runtime, consts)

    def choose(self, *args: Any, **kwargs: Any) -> Choice:
        """The choice for these arguments (tuning now if there is none), without launching;
        the arguments stay the caller's."""
        self._prepare()
        runtime, consts = self._split(args, kwargs)
        device = self._device_of(runtime)
        with devices.scoped(device if device != devices.current() else None):
            return self._choose(runtime, consts, device)

    def _device_of(self, runtime: Mapping[str, Any]) -> int:
        """The device the launch runs on, that of its tensors (LaunchError CT6113 for
        tensors of two devices): the trials, their scratch copies, the timing stream and
        the device a choice is kept for are that device's, not the thread's current one."""
        return devices.one_device(f"`{self.kernel.name}`", [
            (name, v) for name, v in runtime.items() if isinstance(v, _Handle)])

    def _launch(self, choice: Choice, runtime: dict[str, Any], consts: dict[str, Any]
                ) -> TunedOp:
        """The op of `choice` on these arguments, compiled. On a refusal the outputs it
        cut are the caller's again (the same handles, live)."""
        variant = self._variant(choice.index)
        values = {**consts, **choice.config.consts}
        call = dict(runtime)
        whole = []
        cut: dict[str, Partition] = {}
        op = None
        try:
            for p in self._outputs:
                arg = runtime.get(p.name)
                if isinstance(arg, Tensor):
                    call[p.name] = cut[p.name] = self._cut(arg, p, choice.config, values,
                                                           runtime)
                    whole.append(next(i for i, q in enumerate(self._runtime)
                                      if q.name == p.name))
            op = variant(**call, **consts, **choice.config.consts)
            # Compiled now (found: the arguments it was tuned with compiled it), so that a
            # config that cannot compile for these arguments fails here, where `__call__`
            # can still choose another one, and not at the op's start.
            variant._runnable(op.binding.spec)
        except BaseException:
            if op is not None:
                op._give_back()
            # the caller's outputs passed whole are theirs again (the same tensors: a
            # fallback config partitions them anew)
            _restore([(runtime[name], part) for name, part in cut.items()],
                     "a launch that was refused")
            raise
        return TunedOp(op, whole, choice, [(runtime[name], part) for name, part in cut.items()])

    # -- choosing --------------------------------------------------------------------------

    def _choose(self, runtime: dict[str, Any], consts: dict[str, Any], device: int) -> Choice:
        how = mode()
        shape = self._shape_class(runtime, consts)
        memo = (how == "off", device, shape)
        found = self._choices.get(memo)
        if found is not None:
            self.stats["memory_hits"] += 1
            return found
        with self._lock:
            found = self._choices.get(memo)
            if found is not None:
                return found
            if how == "off":
                choice = self._tune(runtime, consts, first_only=True)
                _log.info("autotune `%s`: CUTILE_AUTOTUNE=0: using the first valid config "
                          "%r without benchmarking", self.kernel.name, choice.config)
            else:
                fields = self._fields(shape)
                with store.lock(fields):
                    cached = self._from_disk(fields) if how != "retune" else None
                    if cached is not None:
                        choice = cached
                    else:
                        choice = self._tune(runtime, consts, first_only=False)
                        path = store.save(fields, choice.to_json())
                        if path is not None:
                            choice = Choice(choice.config, choice.index, choice.how,
                                            choice.times, choice.skipped, str(path))
            self._choices[memo] = choice
            return choice

    def _fallback(self, failed: Choice, err: CutileError, runtime: dict[str, Any],
                  consts: dict[str, Any], device: int) -> Choice:
        """A choice for exactly these arguments, which the choice of their shape class
        (`failed`) cannot run (`err`): tuned once per process and kept in memory only (the
        class keeps its own choice); AutotuneError when no config runs them."""
        how = mode()
        memo = (how == "off", device, self._shape_class(runtime, consts))
        exact = json.dumps([[k, _exact(v)] for k, v in sorted({**runtime, **consts}.items())],
                           default=repr)
        found = self._exact.get((memo, exact))
        if found is not None:
            return found
        with self._lock:
            found = self._exact.get((memo, exact))
            if found is not None:
                return found
            _log.warning("autotune `%s`: %r, the choice for this shape class (%s), cannot run "
                         "these arguments (%s); tuning for them", self.kernel.name,
                         failed.config, failed.how, str(err).split("\n", 1)[0])
            choice = self._tune(runtime, consts, first_only=how == "off")
            if len(self._exact) >= EXACT_KEPT:  # (scalars are part of it: bounded)
                self._exact.clear()
            self._exact[(memo, exact)] = choice
            return choice

    def _fields(self, shape: str) -> dict[str, Any]:
        """What a choice on disk is for: the kernel, the device, the search space, the
        shape class."""
        from .. import pipeline

        if self.kernel._kast_hash is None:
            self.kernel._kast_hash = pipeline.kast_sha256(self.kernel.document())
        return {"format": store.FORMAT, "cutile": __version__, "kernel": self.kernel.name,
                "kast_sha256": self.kernel._kast_hash, "hints": self.kernel.hints,
                "opt_level": self.kernel.opt_level, "device": _device(),
                "configs": [c.to_json() for c in self.configs], "shape_class": shape}

    def _from_disk(self, fields: dict[str, Any]) -> Choice | None:
        got = store.load(fields)
        if got is None:
            return None
        index = got.get("index")
        if (not isinstance(index, int) or isinstance(index, bool)
                or not 0 <= index < len(self.configs)
                or got.get("config") != json.loads(json.dumps(self.configs[index].to_json()))):
            return None
        path = store.path_of(fields)
        times = _times(got.get("times_us", {}))
        skipped = got.get("skipped", [])
        if times is None or not isinstance(skipped, list) or not all(
                isinstance(s, dict) for s in skipped):
            # an edited or forged entry: nothing of it is used
            _log.warning("autotune cache entry %s does not hold a choice as cutile writes "
                         "one; tuning again", path)
            return None
        self.stats["disk_hits"] += 1
        choice = Choice(self.configs[index], index, "cached", times, list(skipped), str(path))
        _log.info("autotune `%s`: using %r, chosen before (%s) and cached in %s",
                  self.kernel.name, choice.config, got.get("how"), path)
        return choice

    def _tune(self, runtime: dict[str, Any], consts: dict[str, Any], first_only: bool
              ) -> Choice:
        """Try the configs in order: each is checked, bound and compiled; on the GPU (and
        unless `first_only`) timed. The fastest, or without timing the first valid one."""
        timed = not first_only and bench.can_time()
        self.stats["tunings"] += 1
        scratch = {p.name: bench.scratch_like(runtime.get(p.name), timed)
                   for p in self._written}
        times: dict[int, float] = {}
        valid: list[int] = []
        skipped: list[dict[str, Any]] = []
        first_error: CutileError | None = None
        for i, cfg in enumerate(self.configs):
            self.stats["candidates"] += 1
            try:
                seconds = self._trial(i, cfg, runtime, consts, scratch, timed)
            except CutileError as err:
                if isinstance(err, DeviceError) and err.code != "CT6901":
                    raise  # a fault loses the context: nothing after it can run
                first_error = first_error or err
                reason = str(err).split("\n", 1)[0]
                skipped.append({"index": i, "config": repr(cfg), "code": err.code,
                                "reason": reason})
                _log.info("autotune `%s`: skipping %r: %s", self.kernel.name, cfg, reason)
                continue
            valid.append(i)
            if seconds is not None:
                times[i] = seconds
                _log.debug("autotune `%s`: %r: %.1f us", self.kernel.name, cfg, seconds * 1e6)
            if first_only:
                break
        if not valid:
            tried = len(self.configs)
            raise AutotuneError(
                f"no config of `{self.kernel.name}` can run these arguments ({tried} tried): "
                + "; ".join(f"{s['config']}: {s['reason']}" for s in skipped[:3])
                + ("; ..." if len(skipped) > 3 else ""),
                hint="`err.failures` has every config's reason; `CUTILE_LOG=info` logs them",
                kernel=self.kernel.name, failures=skipped) from first_error
        if timed:
            self.stats["benchmarked"] += 1
            best = min(valid, key=lambda i: (times[i], i))
            _log.info("autotune `%s`: chose %r (%.1f us; %d timed, %d skipped): %s",
                      self.kernel.name, self.configs[best], times[best] * 1e6, len(times),
                      len(skipped), ", ".join(f"#{i} {t * 1e6:.1f} us"
                                              for i, t in sorted(times.items())))
            return Choice(self.configs[best], best, "benchmarked", times, skipped)
        best = valid[0]
        if not first_only:
            _log.info("autotune `%s`: the interpreter cannot time kernels: using the first "
                      "valid config %r without benchmarking (%d of %d valid)",
                      self.kernel.name, self.configs[best], len(valid), len(self.configs))
        return Choice(self.configs[best], best, "first valid", {}, skipped)

    def _trial(self, i: int, cfg: Config, runtime: dict[str, Any], consts: dict[str, Any],
               scratch: dict[str, Any], timed: bool) -> float | None:
        """Bind config `i` to the scratch outputs and the shared inputs, compile it (the
        lowering checks its Const values), and time it when `timed`; the op never runs
        itself and hands every tensor back."""
        variant = self._variant(i)
        values = {**consts, **cfg.consts}
        slow_key = (i, json.dumps(values, sort_keys=True, default=repr))
        if slow_key in self._too_slow:
            first = self._too_slow[slow_key]
            raise CompileError(f"{first.message} (an earlier tuning in this process; not "
                               "compiled again)", code=first.code, hint=first.hint)
        call = dict(runtime)
        cut: dict[str, Partition] = {}
        op = None
        try:
            for p in self._written:
                arg = scratch[p.name]
                if p.kind == "mut_tensor" and isinstance(arg, Tensor):
                    arg = cut[p.name] = self._cut(arg, p, cfg, values, runtime)
                call[p.name] = arg
            # tileiras runs at the bind or at the first `_runnable`: both within the limit
            try:
                with tileiras.time_limit(self.compile_timeout, "`compile_timeout`"):
                    op = variant(**call, **values)
                    runnable = variant._runnable(op.binding.spec)
            except CompileError as err:
                if err.code == "CT7005" and self.compile_timeout is not None:
                    self._too_slow[slow_key] = err
                raise
            return bench.time_op(op, runnable) if timed else None
        finally:
            if op is not None:
                op._give_back()
            for name, part in cut.items():
                scratch[name] = part.unpartition()

    def _variant(self, i: int) -> EntryKernel:
        """The kernel compiled with config `i`'s hints (the body, its AST and its proof
        are the kernel's own)."""
        got = self._variants.get(i)
        if got is None:
            hints = self.configs[i].kernel_hints()
            got = self.kernel.with_hints(**hints) if hints else self.kernel
            if got is not self.kernel:
                got._doc, got._check = self.kernel.document(), self.kernel.check()
                got._kast_hash = self.kernel._kast_hash
            self._variants[i] = got
        return got

    def _cut(self, t: Tensor, p: K.Param, cfg: Config, consts: Mapping[str, Any],
             runtime: Mapping[str, Any]) -> Partition:
        """Partition an output passed whole by its declared tile shape, the names read from
        the config, the call's Consts or the inputs' shapes; for `iter_indices()` outputs,
        with the config's block count."""
        tile = []
        for axis, d in enumerate(p.shape or []):
            if isinstance(d, str):
                value = consts.get(d, _from_shapes(self._runtime, runtime, d))
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ConfigError(
                        f"the tile of `{p.name}` (axis {axis}) is `{d}`, which neither "
                        f"{cfg!r} nor the call sets", code="CT8021",
                        hint=f"set `{d}` in every config, pass `{d}=` at the call, or pass "
                        f"`{p.name}` partitioned")
                tile.append(value)
            else:
                tile.append(int(d))
        part = t.partition(tile)
        if p.name in self._persistent:
            blocks = cfg.num_blocks or self._blocks_per_sm(cfg)
            if blocks:
                part = part.persistent(max(1, min(blocks, part.num_tiles)))
        return part

    def _blocks_per_sm(self, cfg: Config) -> int | None:
        """`occupancy` blocks per multiprocessor (the config's hint, else the kernel's)."""
        occ = cfg.hints.get("occupancy", self.kernel.hint_args.get("occupancy"))
        if isinstance(occ, ByTarget):
            occ = occ.per_arch.get(driver.arch(), occ.default)
        sms = driver.state().sm_count
        return occ * sms if isinstance(occ, int) and sms else None


def _restore(cut: Sequence[tuple[Tensor, Partition]], why: str) -> None:
    """Make each caller's whole tensor live again from the partition of it that work which
    never ran took and gave back (`registry().restore`: the partition is consumed)."""
    from ..runtime.ownership import registry

    for whole, part in cut:
        try:
            registry().restore(whole._handle, part._handle, why)
        except CutileError:  # (never expected) the failure being raised is what matters
            pass


def _times(value: Any) -> dict[int, float] | None:
    """The seconds per launch by config index of an entry's `times_us`, or None when it
    is not a map of indices to finite non-negative microseconds."""
    if not isinstance(value, dict):
        return None
    out: dict[int, float] = {}
    for i, t in value.items():
        if not (isinstance(i, str) and i.isdecimal()) or isinstance(t, bool) or not (
                isinstance(t, (int, float)) and 0 <= t < float("inf")):
            return None
        out[int(i)] = float(t) * 1e-6
    return out


def _exact(value: Any) -> Any:
    """A value as a launch reads it: a tensor's dtype, extents and strides (a partition's
    tiles too), a number itself."""
    if isinstance(value, _Handle):
        out: dict[str, Any] = {"dtype": value.dtype.name, "shape": list(value.shape),
                               "strides": list(value.strides)}
        if isinstance(value, Partition):
            out["tile"] = list(value.tile_shape)
            out["num_blocks"] = value.num_blocks
        return out
    return _describe(value)


def _describe_consts(consts: Mapping[str, Any]) -> list[list[Any]]:
    return [[k, _describe(v)] for k, v in sorted(consts.items())]


def _from_shapes(params: Sequence[K.Param], runtime: Mapping[str, Any], name: str) -> Any:
    """A Const an input's shape names (`Tensor[f32, [-1, "D"]]`), read off the argument."""
    for p in params:
        if p.kind != "tensor":
            continue
        arg = runtime.get(p.name)
        for axis, d in enumerate(p.shape or []):
            if d == name and isinstance(arg, _Handle) and axis < len(arg.shape):
                return arg.shape[axis]
    return None


def _device() -> dict[str, Any]:
    """The device a choice is for: the GPU's name, architecture, SM count and assembler."""
    s = driver.state()
    if s.backend != "gpu":
        return {"backend": "interpreter"}
    try:
        from ..backend.tileiras import find_tileiras, tileiras_version

        tool: str | None = tileiras_version(find_tileiras())
    except CutileError:
        tool = None
    return {"backend": "gpu", "name": s.name, "arch": driver.arch(), "sms": s.sm_count,
            "tileiras": tool}
