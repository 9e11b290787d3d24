"""The oracle: write a generated kernel to files, import it, run the checker, judge every
sampled launch by brute force on the model, launch one on the CPU interpreter with a race
detector, and replay the checker's counterexamples.

Findings (each is a bug somewhere in checker, lowering, launcher or model):
  unsound          the checker accepted, the launcher would admit a launch, the model says
                   that launch races, faults or stores out of bounds
  race / oob / div-zero / fault
                   the interpreter saw it happen on an accepted kernel
  untyped          an exception that is not a `cutile.CutileError` (check, compile, launch)
  internal         a CT9xxx internal error
  mismatch         the kernel ran clean but its output differs from the model's prediction
  bad-counterexample  a CT2001/CT2002 counterexample the model does not reproduce
  lenient          a kernel the model has no meaning for (an unknown keyword) was accepted
                   and ran
  zero-grid        a zero-size launch reached the interpreter instead of being refused or
                   skipped
"""

from __future__ import annotations

import importlib.util
import linecache
import math
import shutil
import sys
import time
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.errors import CutileError, InterpreterError, KernelCheckError, LaunchError, RaceError

from .brute import Verdict, launch_grid, truth
from .program import Kernel, Launch, Persist, render_kernel
from .replay import claims, confirm

MAX_LAUNCH_BLOCKS = 600
NUMPY = {"i8": np.int8, "i32": np.int32, "u8": np.uint8, "u32": np.uint32}


@dataclass
class Finding:
    kind: str
    message: str
    launch: int | None = None


@dataclass
class Outcome:
    case_id: str
    features: list[str]
    status: str = "?"  # accepted | rejected | frontend | invalid
    codes: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    admitted: list[bool] = field(default_factory=list)
    truly_safe: bool | None = None  # None: the model says the kernel cannot compile
    admits_all_safe: bool = False
    findings: list[Finding] = field(default_factory=list)
    launched: str = ""  # what the interpreter launch did
    predicates: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- loading


class Loader:
    """Writes a kernel's files under `root` and imports them (device modules first, each
    registered in `sys.modules` so the entry's `from ... import` finds it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.loaded = 0

    def load(self, k: Kernel) -> Any:
        k.files = render_kernel(k)
        for mod, text in k.files.items():
            (self.root / f"{mod}.py").write_text(text)
        order = [m for m in k.files if m != k.entry_module] + [k.entry_module]
        module = None
        for mod in order:
            spec = importlib.util.spec_from_file_location(mod, self.root / f"{mod}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod] = module
            spec.loader.exec_module(module)
        self.loaded += 1
        return module.kern  # type: ignore[union-attr]

    def unload(self, k: Kernel) -> None:
        for mod in k.files:
            sys.modules.pop(mod, None)
            p = self.root / f"{mod}.py"
            p.unlink(missing_ok=True)
        if self.loaded % 256 == 0:
            linecache.clearcache()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# --------------------------------------------------------------------------- launch facts


def persistent_outputs(result: Any, k: Kernel) -> set[str]:
    """The outputs the checker found walked by `iter_indices()` (its facts decide the
    launch grid); for a kernel whose check failed before facts, the documented rule."""
    outputs = getattr(getattr(result, "result", None) or result, "outputs", None)
    if outputs is not None:
        return {name for name, how in outputs if how == "persistent"}
    return {s.recv for s in k.body if isinstance(s, Persist) and s.recv in
            {o.name for o in k.outs}}


# How a launch lays out each tensor argument: its own buffer, a window inside a larger one,
# every other row of one, or a buffer stored transposed (a permuted view). The kernel sees
# the same shape and values every way; its stores and loads must follow the view's
# strides and stay inside the view's elements, which the detector's bounds are.
LAYOUTS = ("plain", "window", "every-other-row", "transposed")


def layout_of(name: str, shape: tuple[int, ...], tile: tuple[int, ...] | None) -> str:
    """The layout of argument `name` in a launch: the same at every call of `make_args`
    for that launch (the launcher's decision and the run see one layout)."""
    if not shape or 0 in shape:
        return "plain"  # (an empty tensor's extents may be huge: no larger buffer for it)
    pick = LAYOUTS[zlib.crc32(repr((name, shape, tile)).encode()) % len(LAYOUTS)]
    return "window" if pick == "transposed" and len(shape) < 2 else pick


def view_ops(shape: tuple[int, ...], layout: str
             ) -> tuple[tuple[int, ...], list[tuple[str, Any]]]:
    """The buffer shape of a `layout` view of `shape`, and the view ops that cut it out."""
    if layout == "window":
        return tuple(n + 3 for n in shape), [("get", tuple(slice(1, 1 + n) for n in shape))]
    if layout == "every-other-row":
        return ((2 * shape[0] + 1, *shape[1:]),
                [("get", (slice(1, 1 + 2 * shape[0], 2),))])
    if layout == "transposed":
        axes = tuple(reversed(range(len(shape))))
        return tuple(shape[a] for a in axes), [("permute", axes)]
    return shape, []


def _viewed(t: Any, ops: list[tuple[str, Any]]) -> Any:
    """`ops` applied to a cutile tensor or a numpy array (each op drops its parent)."""
    for kind, arg in ops:
        if kind == "get":
            t = t[arg]
        else:
            t = t.transpose(arg) if isinstance(t, np.ndarray) else t.permute(*arg)
    return t


def layout_arg(values: np.ndarray, layout: str) -> Any:
    """A tensor holding `values`, laid out as `layout`, the only live handle of its
    buffer (an output can be partitioned); the rest of the buffer holds a value the kernel
    must never touch."""
    big, ops = view_ops(tuple(values.shape), layout)
    host = np.full(big, 77, dtype=values.dtype)
    _viewed(host, ops)[...] = values
    return _viewed(api.from_numpy(host), ops)


def make_args(k: Kernel, ln: Launch) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    for o in k.outs:
        shape, tile = tuple(ln.shapes[o.name]), tuple(ln.tiles[o.name])
        z = layout_arg(np.zeros(shape, np.int32), layout_of(o.name, shape, tile))
        p = z.partition(list(tile))
        if ln.persistent is not None:
            p = p.persistent(ln.persistent or None)
        args.append(p)
    for x in k.ins:
        shape = ln.shapes[x.name]
        if x.name in ln.data:
            values = np.array(ln.data[x.name], dtype=NUMPY[x.dtype])
        else:
            values = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
        args.append(layout_arg(values, layout_of(x.name, tuple(values.shape), None)))
    args += [ln.scalars[n] for n, _ in k.scalars]
    return args, dict(ln.given)


def launcher_grid(kern: Any, k: Kernel, ln: Launch) -> tuple[int, int, int] | None:
    """The real launcher's decision, nothing run: the grid it binds (`(0, 0, 0)`: nothing to
    do), or None when it refuses the launch (binding, grid rules or a launch predicate).
    The pending launch hands the tensors back unstarted."""
    args, kwargs = make_args(k, ln)
    try:
        pending = kern(*args, **kwargs)
    except LaunchError:
        return None
    except CutileError as exc:
        if exc.code.startswith("CT9"):
            raise
        return None
    grid = tuple(int(g) for g in pending.grid)
    pending._give_back()
    return grid  # type: ignore[return-value]


# --------------------------------------------------------------------------- launching


def classify(exc: BaseException) -> tuple[str, str | None]:
    """(what happened, finding kind or None) for an exception of a launch."""
    if isinstance(exc, RaceError):
        return "race", "race"
    if isinstance(exc, LaunchError):
        return f"refused {exc.code}", None
    if isinstance(exc, InterpreterError):
        op = exc.op or ""
        if op == "assert":
            return "device-check", None
        if "grid must be" in exc.message:
            return "zero-grid", "zero-grid"
        if op in ("store_view_tko", "load_view_tko"):
            return "oob", "oob"
        if op in ("divi", "remi"):
            return "div-zero", "div-zero"
        return "fault", "fault"
    if isinstance(exc, CutileError):
        if exc.code.startswith("CT9"):
            return "internal", "internal"
        return f"refused {exc.code}", None
    return "untyped", "untyped"


def run_launch(kern: Any, k: Kernel, ln: Launch) -> tuple[list[np.ndarray] | None, Any]:
    args, kwargs = make_args(k, ln)
    res = kern(*args, **kwargs).sync()
    return [res[i].unpartition().to_numpy() for i in range(len(k.outs))], None


def launch_and_compare(kern: Any, k: Kernel, i: int, v: Verdict, out: Outcome,
                       accepted_unsafe: bool) -> None:
    ln = k.launches[i]
    try:
        with cutile.check_races():
            outs, _ = run_launch(kern, k, ln)
    except Exception as exc:  # every exception is classified; untyped ones are findings
        what, kind = classify(exc)
        out.launched = what
        if kind == "oob" and v.reason == "oob-ragged-subtile":
            kind = "oob-ragged-subtile"
        if kind is not None:
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            if kind == "untyped":
                msg += "\n" + "".join(traceback.format_exception(exc)[-6:])
            if kind == "race" and hasattr(exc, "blocks"):
                msg += f"\n  kind={getattr(exc, 'kind', '')} tensor={getattr(exc, 'tensor', '')}"
                msg += f" element={getattr(exc, 'element', '')} blocks={exc.blocks}"
            out.findings.append(Finding(kind, msg, i))
        return
    out.launched = "ran"
    if v.reason == "compile":
        out.findings.append(Finding("lenient", f"the model has no meaning for this kernel "
                                    f"({v.detail}) but it was accepted and ran", i))
        return
    if not v.safe:
        if accepted_unsafe:
            out.launched = "ran (the model's fault did not show)"
        return
    assert outs is not None
    for o, got in zip(k.outs, outs, strict=True):
        want = v.expected.get(o.name)
        if want is None or want.shape != got.shape:
            continue
        diff = np.argwhere(want != got)
        if len(diff):
            e = tuple(int(x) for x in diff[0])
            out.findings.append(Finding(
                "mismatch", f"`{o.name}`{list(e)} is {int(got[e])} (written by block #"
                f"{int(got[e]) - 1}), the model predicts {int(want[e])} "
                f"({len(diff)} elements differ)", i))
            return


# --------------------------------------------------------------------------- one kernel


def run_case(k: Kernel, loader: Loader, launch: bool = True) -> Outcome:
    out = Outcome(k.case_id, sorted(k.features))
    t0 = time.perf_counter()
    try:
        kern = loader.load(k)
    except CutileError as exc:
        out.status = "frontend"
        out.codes = [exc.code]
        loader.unload(k)
        return out
    except Exception as exc:
        out.status = "invalid"
        out.findings.append(Finding("generator", f"{type(exc).__name__}: {exc}"))
        loader.unload(k)
        return out
    t1 = time.perf_counter()
    try:
        result = kern.check()
        out.status = "accepted"
    except KernelCheckError as exc:
        out.status = "rejected" if not exc.code.startswith("CT0") else "frontend"
        out.codes = exc.codes
        result = exc
    except CutileError as exc:
        out.status = "frontend"
        out.codes = [exc.code]
        result = None
    except Exception as exc:
        out.status = "untyped"
        out.findings.append(Finding("untyped", "check(): " + "".join(
            traceback.format_exception(exc)[-6:])))
        result = None
    t2 = time.perf_counter()
    mapped = persistent_outputs(result, k)
    out.mapped = sorted(mapped)
    if out.status == "accepted":
        out.predicates = [o.predicate for o in result.obligations
                          if o.discharged == "launch" and o.predicate]
    verdicts = []
    for i, ln in enumerate(k.launches):
        v = truth(k, ln, mapped)
        grid = None
        if out.status == "accepted":
            try:
                grid = launcher_grid(kern, k, ln)
            except Exception as exc:  # an untyped or internal error deciding a launch
                out.findings.append(Finding(classify(exc)[1] or "untyped", "launch decision: "
                                            + "".join(traceback.format_exception(exc)[-6:]), i))
        if grid is not None and v.reason != "no-launch" and grid != v.grid:
            if math.prod(grid) != 0:
                out.findings.append(Finding("grid", f"the launcher binds grid {grid}, the "
                                            f"model's launch rule gives {v.grid}", i))
            v = truth(k, ln, mapped, grid)
        verdicts.append(v)
        out.verdicts.append(v.reason or "safe")
        out.admitted.append(grid is not None and v.reason != "no-launch")
    compile_err = any(v.reason == "compile" for v in verdicts)
    out.truly_safe = None if compile_err else all(v.safe for v in verdicts)
    out.admits_all_safe = out.status == "accepted" and all(
        a for a, v in zip(out.admitted, verdicts, strict=True) if v.safe and v.reason == "")
    unsafe_admitted = [i for i, (a, v) in enumerate(zip(out.admitted, verdicts, strict=True))
                       if a and not v.safe]
    # An obligation left to a device assert guards some access the model cannot locate:
    # then only the interpreter (the assert fires, or the fault shows) can tell.
    guarded = out.status == "accepted" and any(o.discharged == "device"
                                               for o in result.obligations)
    for i in unsafe_admitted[:1]:
        v = verdicts[i]
        if guarded and v.reason.startswith("oob"):
            continue
        if guarded and v.reason == "loop-step":
            # the checker left a step to the device (`loop-step-positive` discharged there):
            # the interpreter launch shows the check firing, or the fault
            continue
        out.findings.append(Finding("unsound", f"accepted, admitted at launch {i} "
                                    f"(grid {v.grid}), and the model says {v.reason}: "
                                    f"{v.detail}", i))
    if out.status == "rejected" and isinstance(result, KernelCheckError):
        for c in claims(result.diagnostics):
            ok, why = confirm(k, c, mapped)
            if ok is False:
                out.findings.append(Finding("bad-counterexample", f"{c.code}: {c.text}\n  {why}"))
    t3 = time.perf_counter()
    if launch and out.status == "accepted":
        pick = unsafe_admitted[0] if unsafe_admitted else None
        if pick is None:
            sizes = [(0 if a else 1, math.prod(v.grid) == 0, math.prod(v.grid), i)
                     for i, (a, v) in enumerate(zip(out.admitted, verdicts, strict=True))]
            pick = min(sizes)[3]
        if math.prod(verdicts[pick].grid) <= MAX_LAUNCH_BLOCKS:
            if verdicts[pick].safe and not verdicts[pick].expected:
                verdicts[pick] = truth(k, k.launches[pick], mapped, verdicts[pick].grid)
            launch_and_compare(kern, k, pick, verdicts[pick], out, bool(unsafe_admitted))
    t4 = time.perf_counter()
    out.seconds = {"load": t1 - t0, "check": t2 - t1, "model": t3 - t2, "launch": t4 - t3}
    loader.unload(k)
    return out


# --------------------------------------------------------------------------- reports


def describe_launch(k: Kernel, ln: Launch, mapped: set[str] | None = None) -> str:
    parts = []
    for o in k.outs:
        p = (f"{o.name} = api.zeros({list(ln.shapes[o.name])}, i32)"
             f".partition({list(ln.tiles[o.name])})")
        if ln.persistent is not None:
            p += f".persistent({ln.persistent or ''})"
        parts.append(p)
    for x in k.ins:
        parts.append(f"{x.name} = api.from_numpy(np.arange(...).reshape({ln.shapes[x.name]}))")
    call = ", ".join([o.name for o in k.outs] + [x.name for x in k.ins]
                     + [str(ln.scalars[n]) for n, _ in k.scalars]
                     + [f"{c}={v}" for c, v in ln.given.items()])
    parts.append(f"kern({call}).sync()")
    grid = launch_grid(k, ln, mapped if mapped is not None else set())
    parts.append(f"# grid {grid}; Consts {ln.consts}")
    return "\n".join(parts)


def report(k: Kernel, out: Outcome) -> str:
    lines = [f"# case {k.case_id}: {out.status} {' '.join(out.codes)}",
             f"# features: {', '.join(out.features)}",
             f"# launch predicates: {out.predicates}",
             f"# model per launch: {out.verdicts}; admitted: {out.admitted}",
             f"# interpreter launch: {out.launched}", ""]
    for f in out.findings:
        lines.append(f"## finding [{f.kind}] (launch {f.launch}): {f.message}")
    lines.append("")
    for i, ln in enumerate(k.launches):
        lines.append(f"## launch {i}\n{describe_launch(k, ln, set(out.mapped))}")
    for mod, text in k.files.items():
        lines += ["", f"## file {mod}.py", text]
    return "\n".join(lines)
