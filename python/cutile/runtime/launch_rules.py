"""Host-side launch rules that need the kernel's static facts: the grid (host rule 6,
including persistent kernels), the checker's launch predicates (evaluated fail closed), and
the report of a kernel fault. The native launcher takes the fast path; these produce the
exact errors and normalized arguments for everything else."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .. import _native
from ..errors import DeviceError, LaunchError
from ..frontend import kast as K
from . import driver
from .binding import Binding
from .tensor import Partition

# Kernel faults: an illegal address, a failed device assert (a bounds check the checker left
# to the device), a trap. The context is unusable afterwards (a sticky CUDA error).
_KERNEL_FAULTS = {700, 710, 714, 715, 716, 717, 718, 719}


def device_error_reporter(kernel_ref: Any) -> Callable[[int, str], None]:
    def report(code: int, what: str) -> None:
        try:
            driver.raise_cuda_error(code, what)
        except DeviceError as err:
            kernel = kernel_ref()
            if code not in _KERNEL_FAULTS or kernel is None:
                raise
            checks = [f"{o.span.file}:{o.span.line}" for o in kernel.check_report()
                      if o.discharged == "device"]
            where = (f"; its device-side checks are at {', '.join(checks)} (a failed one prints "
                     "its message above)") if checks else ""
            raise DeviceError(
                f"`{kernel.name}` failed on the GPU: {err.message}{where}",
                code="CT6903",
                hint="the CUDA context cannot be used after a kernel fault; fix the input or "
                "the index arithmetic and restart the process",
            ) from None

    return report


def mapped_params(entry: K.Function) -> frozenset[str]:
    """`Mut` parameters the entry walks with `for idx in z.iter_indices()`."""
    muts = {p.name for p in entry.params if p.kind == "mut_tensor"}
    found: set[str] = set()

    def walk(stmts: list[K.Stmt]) -> None:
        for s in stmts:
            if isinstance(s, K.For):
                it = s.iter
                if (isinstance(it, K.Method) and it.method == "iter_indices"
                        and isinstance(it.receiver, K.Name) and it.receiver.id in muts):
                    found.add(it.receiver.id)
                walk(s.body)
            elif isinstance(s, K.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, (K.While, K.Unsafe)):
                walk(s.body)

    walk(entry.body)
    return frozenset(found)


_GRIDS: dict[tuple[Any, ...], tuple[int, int, int]] = {}


def launch_grid(name: str, b: Binding, mapped: frozenset[str]) -> tuple[int, int, int]:
    """Host rule 6: the grid is the partitions' tile grid; a persistent kernel launches
    `num_blocks` blocks that share its mapped partitions' tiles by the checked schedule."""
    regular = []
    persistent: list[tuple[str, Partition, list[int]]] = []
    for p, v in zip(b.params, b.values, strict=True):
        if not isinstance(v, Partition):
            continue
        declared = [int(b.consts[d]) if isinstance(d, str) else d for d in (p.shape or [])]
        if p.name in mapped:
            persistent.append((p.name, v, declared))
        else:
            regular.append((p.name, list(v.shape), list(v.tile_shape), declared))
    if not regular and not persistent:
        raise LaunchError(
            f"`{name}` has no `Mut` output, so no partition determines its grid", code="CT6107",
        )
    if not persistent:
        key = tuple((n, tuple(s), tuple(t), tuple(d)) for n, s, t, d in regular)
        cached = _GRIDS.get(key)
        if cached is None:  # a pure function of the shapes: each distinct set is checked once
            cached = _native.validate_launch(name, (0, 0, 0), regular)
            if len(_GRIDS) < 4096:
                _GRIDS[key] = cached
        return cached
    asked = {v.num_blocks for _, v, _ in persistent if v.num_blocks is not None}
    if len(asked) > 1:
        raise LaunchError(f"`{name}`: mapped partitions ask for different block counts "
                          f"{sorted(asked)}", code="CT6108")
    for pname, v, declared in persistent:
        _native.validate_launch(name, (0, 0, 0),
                                [(pname, list(v.shape), list(v.tile_shape), declared)])
    fewest = min(v.num_tiles for _, v, _ in persistent)
    if asked:
        nb = asked.pop()
    else:
        sms = driver.state().sm_count or 132
        nb = max(1, min(fewest, sms))
    grid: tuple[int, int, int] = (nb, 1, 1)
    if regular:
        _native.validate_launch(name, grid, regular)
    return grid


Getter = Callable[[Binding], int]


class LaunchChecks:
    """The checker's launch predicates, evaluated on the host before every launch; a false
    or undecidable predicate refuses the launch (fail closed). Each predicate's atoms are
    compiled once into getters; a predicate that held for the same atom values is not
    evaluated again."""

    ATOM = re.compile(r"^(grid|dim|tiles)\((\w+)(?:,\s*(\d+))?\)$")

    def __init__(self, kernel: str, entry: K.Function, obligations: Any) -> None:
        self.kernel = kernel
        position = {p.name: i for i, p in enumerate(p for p in entry.params
                                                    if p.kind != "const")}
        self.checks: list[tuple[Any, list[str], list[Getter]]] = []
        for o in obligations:
            if o.discharged == "launch" and o.predicate:
                atoms = list(_native.predicate_atoms(o.predicate))
                getters = [self._getter(a, position) for a in atoms]
                self.checks.append((o, atoms, getters))
        self._passed: set[tuple[Any, ...]] = set()

    def _getter(self, atom: str, position: dict[str, int]) -> Getter:
        m = self.ATOM.match(atom)
        if m:
            fn, a, axis_s = m.group(1), m.group(2), m.group(3)
            if fn == "grid":
                g = int(a)
                return lambda b: b.grid[g]
            i, axis = position[a], int(axis_s)
            if fn == "dim":
                return lambda b: int(b.values[i].shape[axis])
            return lambda b: -(-int(b.values[i].shape[axis]) // int(b.values[i].tile_shape[axis]))
        if atom in position:
            i = position[atom]
            return lambda b: int(b.values[i])
        return lambda b: int(b.consts[atom])

    def verify(self, b: Binding) -> None:
        for n, (o, atoms, getters) in enumerate(self.checks):
            try:
                vals = tuple(g(b) for g in getters)
            except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
                raise LaunchError(
                    f"`{self.kernel}`: cannot evaluate launch check `{o.predicate}` ({exc})",
                    code="CT6201",
                ) from None
            key = (n, *vals)
            if key in self._passed:
                continue
            values = dict(zip(atoms, vals, strict=True))
            try:
                ok = _native.eval_predicate(o.predicate, values)
            except ValueError as exc:
                ok, why = False, f" (undecidable: {exc})"
            else:
                why = ""
            if not ok:
                shown = ", ".join(f"{k} = {v}" for k, v in values.items())
                raise LaunchError(
                    f"`{self.kernel}`: launch check `{o.predicate}` failed{why} with {shown}: "
                    f"{o.description} ({o.span.file}:{o.span.line})",
                    code="CT6200",
                    hint="the arguments' shapes do not fit the kernel's index arithmetic; "
                    "`kernel.check_report()` lists every check",
                )
            self._passed.add(key)
