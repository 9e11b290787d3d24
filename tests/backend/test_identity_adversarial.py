"""Adversarial review (2026-12): is the kernel that runs exactly the one that was checked?

What a kernel is gets decided once, when its kernel AST is built (`EntryKernel.document`):
globals, closure cells and device functions are read then and folded into the AST, which the
checker, the lowering and every cache key (`pipeline.kernel_identity`) all read. These tests
change each of those inputs after the first check and show that what runs is the checked
snapshot, that a kernel built again sees (and re-checks) the new values, and that nothing
keyed by a kernel's identity can serve one kernel's code for another.

Disk-cache tampering (entries copied, symlinked or damaged) and the autotune choice cache:
`test_identity_caches.py`.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api, pipeline
from cutile.core import Mut, Tensor, block_id, f32, i32, load_tile_like, sum
from cutile.errors import CutileError, KernelCheckError

SHIFT = 0  # read by `_shifted`: changed by tests after the first check
SCALE = 2.0


@cutile.device
def twice(t):  # type: ignore[no-untyped-def]
    return t * SCALE


@cutile.device
def thrice(t):  # type: ignore[no-untyped-def]
    return t * 3.0


# Plain functions: each test wraps them in a fresh `cutile.entry`, so that no test sees
# another's cached document.
def _shifted(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):  # type: ignore[no-untyped-def]
    z.store(twice(load_tile_like(x, z)), index=(block_id(0) + SHIFT,))


def _gather(z: Mut[Tensor[f32, [1, 16]]], x: Tensor[f32, [-1, 16]],  # type: ignore[no-untyped-def]
            idx: Tensor[i32, [-1, 1]]):
    j = sum(idx.load_tile((1, 1), (block_id(0), 0)))  # read from memory: a device assert
    z.store(x.load_tile((1, 16), (j, 0)))


def shifted_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = api.from_numpy(np.arange(64, dtype=np.float32))
    return (api.zeros([64], f32).partition([16]), x), {}


def run_shifted(k: Any) -> np.ndarray:
    args, _ = shifted_args()
    with cutile.check_races():
        z, _x = k(*args).sync()
    return np.asarray(z.unpartition().to_numpy())


def outcome(k: Any, make_args: Any) -> str:
    """`rejected`, `ran` (race- and bounds-clean), or what else happened (the soundness
    harness's verdicts, `tests/soundness/harness.py`, without the package import)."""
    try:
        k.check()
    except KernelCheckError:
        return "rejected"
    args, kwargs = make_args()
    try:
        with cutile.check_races():
            k(*args, **kwargs).sync()
    except Exception as exc:  # any failure is the verdict, reported by name
        return f"{type(exc).__name__}: {exc}"
    return "ran"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- module globals, device functions, closures ----------------------------------------------

def test_globals_changed_after_the_check_do_not_reach_the_launch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    k = cutile.entry(_shifted)
    k.check()  # SHIFT = 0, SCALE = 2, `twice`: proved in bounds
    me = sys.modules[__name__]
    # Each of these, read again by the lowering or the launcher, would run another kernel
    # than the one proved: SHIFT = 1 makes the last block store past the grid.
    monkeypatch.setattr(me, "SHIFT", 1)
    monkeypatch.setattr(me, "SCALE", 5.0)
    monkeypatch.setattr(me, "twice", thrice)
    x = np.arange(64, dtype=np.float32)
    assert (run_shifted(k) == 2 * x).all()  # the checked snapshot ran, race/bounds-clean
    # A kernel made now reads the new values, and is checked on them: rejected.
    fresh = cutile.entry(_shifted)
    assert outcome(fresh, shifted_args) == "rejected"
    assert pipeline.kast_sha256(fresh.document()) != pipeline.kast_sha256(k.document())


def test_a_with_hints_variant_made_after_a_change_is_checked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `with_hints` builds a new kernel from the same function: it must not inherit the
    # original's proof while reading the changed globals into its own AST.
    k = cutile.entry(_shifted)
    k.check()
    monkeypatch.setattr(sys.modules[__name__], "SHIFT", 1)
    v = k.with_hints(occupancy=2)
    assert outcome(v, shifted_args) == "rejected"
    assert outcome(k, shifted_args) == "ran"


def _factory(shift: int, scale: float) -> Any:
    # Every kernel made here has the same name, qualname, file and source text.
    @cutile.entry
    def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):  # type: ignore[no-untyped-def]
        z.store(load_tile_like(x, z) * scale, index=(block_id(0) + shift,))
    return k


def test_closures_with_the_same_source_are_distinct_kernels(cache: Path) -> None:
    ks = [_factory(0, float(s)) for s in (1, 2, 3)]
    assert len({k.__qualname__ for k in ks}) == 1
    ids = [k.identity(k.specialization({})) for k in ks]
    assert len({pipeline.kast_sha256(k.document()) for k in ks}) == 3, ids
    x = np.arange(64, dtype=np.float32)
    for _ in range(2):  # alternate: no per-name cache may hand one kernel's code to another
        for s, k in zip((1, 2, 3), ks, strict=True):
            assert (run_shifted(k) == s * x).all()
    # one captured value that breaks the proof: that kernel alone is rejected
    assert outcome(_factory(1, 1.0), shifted_args) == "rejected"


def test_a_kernel_made_by_exec_has_no_source_and_is_a_typed_error() -> None:
    scope: dict[str, Any] = {"cutile": cutile, "Mut": Mut, "Tensor": Tensor, "f32": f32,
                             "load_tile_like": load_tile_like}
    exec(textwrap.dedent("""
        @cutile.entry
        def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
            z.store(load_tile_like(x, z))
    """), scope)
    with pytest.raises(CutileError) as info:
        scope["k"].check()
    assert info.value.code == "CT0004"


# -- the source file changed on disk ---------------------------------------------------------

KERNEL_FILE = '''
import cutile
from cutile.core import Mut, Tensor, f32, load_tile_like


@cutile.entry
def scale(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    z.store(load_tile_like(x, z) * 2.0)
'''

OTHER_KERNEL = '''
@cutile.entry
def other(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    with cutile.unsafe():
        z.store_unchecked(load_tile_like(x, z), (0,))  # every block writes tile 0
'''


@pytest.fixture
def kernel_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A module imported from a file the test may then edit."""
    path = tmp_path / "edited_kernels.py"
    path.write_text(KERNEL_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mod = importlib.import_module("edited_kernels")
    yield mod
    sys.modules.pop("edited_kernels", None)


def test_a_file_edited_so_that_another_function_sits_at_the_kernels_line_is_not_run(
        kernel_module: Any) -> None:
    # The source was found by the code's first line in the file as it was at the first
    # check: lines put above the kernel brought another function there, which was checked
    # and run under `scale`'s name (here a racing one). Now the decorator reads the
    # source, and a source that is not the loaded function is CT0004.
    path = Path(kernel_module.__file__)
    head, tail = path.read_text().split("@cutile.entry")
    path.write_text(head + OTHER_KERNEL + "\n@cutile.entry" + tail)
    assert [f.name for f in kernel_module.scale.document().functions] == ["scale"]
    args, _ = shifted_args()
    z, _x = kernel_module.scale(*args).sync()
    assert (z.unpartition().to_numpy() == 2 * np.arange(64)).all()


def test_a_source_that_is_not_the_loaded_function_is_refused(tmp_path: Path) -> None:
    # the check behind the decorator's reading, for a function read only now
    from cutile.frontend.capture import capture

    path = tmp_path / "moved_function.py"
    path.write_text("def scale(z, x):\n    return x\n")
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    path.write_text("def other(a):\n    return a\n")
    import linecache

    linecache.checkcache(str(path))
    with pytest.raises(CutileError) as info:
        capture(namespace["scale"])
    assert info.value.code == "CT0004"
    assert "def other" in str(info.value)


def test_a_body_edited_on_disk_after_import_is_not_what_runs(kernel_module: Any) -> None:
    path = Path(kernel_module.__file__)
    # Finding (fixed): the source was read at the first check, not when the function was
    # defined, so the edited body was checked and run. Now it is read by the decorator.
    path.write_text(path.read_text().replace("* 2.0", "* 3.0"))
    args, _ = shifted_args()
    try:
        z, _x = kernel_module.scale(*args).sync()
    except CutileError:
        return  # refusing the edited file would do too
    # the function Python loaded multiplies by 2
    assert (z.unpartition().to_numpy() == 2 * np.arange(64)).all()


# -- names and variants ----------------------------------------------------------------------

@cutile.device
def _helper_named_like_the_entry(t):  # type: ignore[no-untyped-def]
    return t + t


_helper_named_like_the_entry.__name__ = "add_twice"


def test_a_device_function_named_like_its_entry(cache: Path) -> None:
    # A helper imported under another name (`from helpers import add as h` in `def add`)
    # gave the document two functions named `add`: an untyped ValueError ("invalid kernel
    # AST") before the fix, and the lowering finds functions by name.
    @cutile.entry
    def add_twice(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):  # type: ignore[no-untyped-def]
        z.store(_helper_named_like_the_entry(load_tile_like(x, z)))

    assert add_twice.check().ok
    names = [f.name for f in add_twice.document().functions]
    assert names[0] == "add_twice" and len(set(names)) == 2
    x = np.arange(64, dtype=np.float32)
    assert (run_shifted(add_twice) == 2 * x).all()


def test_every_variant_of_one_function_is_its_own_identity() -> None:
    base = cutile.entry(_shifted)
    variants = [base, base.with_hints(occupancy=2), base.with_hints(opt_level=2),
                base.with_hints(fp_contract=True),
                cutile.entry(deny_in_kernel_checks=True)(_shifted)]
    spec = base.specialization({})
    seen = {json.dumps(v.identity(spec), sort_keys=True) for v in variants}
    assert len(seen) == len(variants)


class Unchecked(cutile.EntryKernel):
    """Lowered without the checker's facts: no device asserts (tests of the detector)."""

    _unchecked = True


@pytest.mark.tileiras
def test_an_unchecked_build_never_serves_the_checked_kernel(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The launch cache is keyed by identity, not bytecode. Before the fix an unchecked
    # build of the same function (the detector's tests) had the checked kernel's identity:
    # its cubin, without the device assert that bounds `j`, loaded for the checked kernel
    # in every later process sharing the cache directory.
    from cutile.runtime import driver, launch

    monkeypatch.setattr(driver, "arch", lambda device=None: "sm_90")
    monkeypatch.setattr(launch, "LoadedKernel", lambda cubin, *rest: cubin)
    checked, unchecked = cutile.entry(_gather), Unchecked(_gather)
    spec = checked.specialization({})
    assert any(o.discharged == "device" for o in checked.check_report())
    bad = unchecked._load_for_gpu(spec, 0, False)
    good = cutile.entry(_gather)._load_for_gpu(spec, 0, False)
    assert good != bad
    assert good == pipeline.assemble(checked.lowered(spec), "sm_90").cubin

