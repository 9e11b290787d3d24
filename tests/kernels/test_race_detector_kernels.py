"""The race detector through real kernels on the interpreter: `CUTILE_INTERPRET=check` and
`cutile.check_races()` turn it on per launch, reports name the kernel's parameters and source
lines, and every example and checked kernel runs clean under it.

Racy kernels cannot get past the static checker (that is its job), so `Unchecked` launches
them without it: the detector is the oracle that checks the checker."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kernel_source import EXAMPLES, load_example

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32, load_tile_like, num_tiles
from cutile.interpreter import InterpreterError

HERE = Path(__file__).resolve()
rng = np.random.default_rng(7)


class Unchecked(cutile.EntryKernel):
    """A kernel launched even though the static checker rejects it (tests only): no device
    asserts, and launch predicates only where the checker made some."""

    _unchecked = True


def unchecked(fn: Callable[..., Any]) -> Unchecked:
    return Unchecked(fn)


def line_of(marker: str) -> int:
    """The line of this file that carries `# <- marker`."""
    for i, text in enumerate(HERE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# <- {marker}"):
            return i
    raise AssertionError(marker)


@pytest.fixture(autouse=True)
def _interpreted(interpreter: None) -> None:
    """Every test here runs on the interpreter (the `interpreter` fixture, conftest.py)."""


@unchecked
def pairs_write_one_tile(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    z.store(load_tile_like(x, z), index=(block_id(0) // 2,))  # <- ww


@unchecked
def reads_previous_tile(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    z.store(load_tile_like(x, z))
    t = z.load(index=((block_id(0) + 3) % 4,))  # <- rw-read
    z.store(t, index=(block_id(0),))


@unchecked
def reads_next_tile(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    t = z.load(index=((block_id(0) + 1) % 4,))
    z.store(t + load_tile_like(x, z))  # <- rw-write


@unchecked
def stores_one_tile_ahead(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    z.store(load_tile_like(x, z), index=(block_id(0) + 1,))  # <- oob


@cutile.entry
def unsafe_pairs(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    with cutile.unsafe():  # the checker proves nothing here: the detector is the test
        z.store_unchecked(t, (block_id(0) // 2,))  # <- unsafe


@cutile.entry
def unsafe_permutation(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    with cutile.unsafe():
        z.store_unchecked(t, ((block_id(0) + 1) % 4,))


@cutile.entry
def own_tile_twice(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))
    t = z.load()
    z.store(t + t)


@cutile.entry
def sums_all_of_x(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    acc = load_tile_like(x, z) * 0.0
    for k in range(num_tiles(x, 0, (B,))):
        acc = acc + x.load_tile((B,), (k,))
    z.store(acc)


@cutile.entry
def scale(z: Mut[Tensor[f32, [32, 64]]], x: Tensor[f32, [-1, -1]], G: Const[int]):
    for idx in z.iter_indices(group=G):
        z.store(x.load_tile((32, 64), idx) * 2.0, index=idx)


@cutile.entry
def twice2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
            BN: Const[int]):
    z.store(load_tile_like(x, z) * 2.0)


def args16() -> tuple[Any, Any]:
    return api.zeros([16], f32).partition([4]), api.from_numpy(np.arange(16, dtype=np.float32))


# -- reports through the launcher --------------------------------------------------------------


def test_two_blocks_storing_one_tile() -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        pairs_write_one_tile(*args16()).sync()
    err = info.value
    assert (err.kind, err.code, err.tensor, err.element) == ("write-write", "CT6911", "z", (0,))
    assert err.blocks == ((0, 0, 0), (1, 0, 0))
    assert err.kernel == "pairs_write_one_tile"
    assert err.location is not None and err.location.endswith(f"{HERE.name}:{line_of('ww')}")
    assert (f"pairs_write_one_tile: blocks (0, 0, 0) and (1, 0, 0) both write z[0] "
            f"({err.location})") in str(err)


def test_reading_a_tile_another_block_wrote() -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        reads_previous_tile(*args16()).sync()
    err = info.value
    assert (err.kind, err.tensor, err.element, err.blocks) == (
        "read-write", "z", (0,), ((0, 0, 0), (1, 0, 0)))
    assert err.location is not None and err.location.endswith(f":{line_of('rw-read')}")
    assert "block (1, 0, 0) reads z[0], which block (0, 0, 0) writes" in str(err)


def test_writing_a_tile_another_block_read() -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        reads_next_tile(*args16()).sync()
    err = info.value
    assert (err.kind, err.tensor, err.element, err.blocks) == (
        "read-write", "z", (4,), ((0, 0, 0), (1, 0, 0)))
    assert err.location is not None and err.location.endswith(f":{line_of('rw-write')}")


def test_tile_index_outside_the_index_space() -> None:
    with pytest.raises(InterpreterError) as plain:
        stores_one_tile_ahead(*args16()).sync()
    assert not isinstance(plain.value, cutile.RaceError)
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        stores_one_tile_ahead(*args16()).sync()
    err = info.value
    assert (err.kind, err.code, err.tensor, err.element, err.blocks) == (
        "out-of-bounds", "CT6913", "z", (16,), ((3, 0, 0),))
    assert err.location is not None and err.location.endswith(f":{line_of('oob')}")


def test_tensors_come_back_after_a_report() -> None:
    z, x = args16()
    with cutile.check_races(), pytest.raises(cutile.RaceError):
        pairs_write_one_tile(z, x).sync()
    assert x.to_numpy()[:2].tolist() == [0, 1]
    assert z.to_numpy()[:8].tolist() == [0, 1, 2, 3, 0, 0, 0, 0]  # block 1 was stopped


# -- unsafe kernels: what the checker cannot prove, the detector tests ------------------------


def test_an_unsafe_kernel_that_races_is_caught() -> None:
    unsafe_pairs.check()  # accepted: `unsafe` asks the checker for no proof
    z, _ = unsafe_pairs(*args16()).sync()  # and on its own it races silently
    assert z.to_numpy()[:4].tolist() == [4, 5, 6, 7]
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        unsafe_pairs(*args16()).sync()
    err = info.value
    assert (err.kind, err.tensor, err.element, err.blocks) == (
        "write-write", "z", (0,), ((0, 0, 0), (1, 0, 0)))
    assert err.location is not None and err.location.endswith(f":{line_of('unsafe')}")


def test_an_unsafe_kernel_that_is_race_free_runs_clean() -> None:
    with cutile.check_races():
        z, _ = unsafe_permutation(*args16()).sync()
    assert z.to_numpy().tolist() == [12, 13, 14, 15, *range(12)]


def test_the_papers_race_is_found_at_the_pair_the_checker_names() -> None:
    """The oracle agrees with the checker: run the racy head permutation without the checker
    and the detector stops it at the two blocks the checker's CT2001 names."""
    racy = load_example("race/permute_heads_racy").permute_heads_racy
    with pytest.raises(cutile.KernelCheckError) as static:
        racy.check()
    assert "blocks (0, 2, 0) and (2, 0, 0) both store to tile (2, 0, 0)" in str(static.value)
    b, h, m, d, bm = 2, 2, 96, 16, 32  # grid (B*H, M/BM) = (4, 3): M/BM > H, so it races
    src = api.from_numpy(rng.standard_normal((b * h, m, d)).astype(np.float32))
    dst = api.zeros([b * h, m, d], f32).partition([1, bm, d])
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        Unchecked(racy.fn)(dst, src, H=h).sync()
    err = info.value
    assert (err.kind, err.tensor, err.element) == ("write-write", "dst", (2, 0, 0))
    assert set(err.blocks) == {(0, 2, 0), (2, 0, 0)}


def test_the_unsafe_race_example_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    err = load_example("race/detect_unsafe_race").main()
    assert (err.kind, err.tensor, err.element) == ("write-write", "dst", (2, 0, 0))
    assert set(err.blocks) == {(0, 2, 0), (2, 0, 0)}
    assert "[CT6911] permute_heads_unsafe: blocks" in capsys.readouterr().out


# -- race-free kernels stay quiet -------------------------------------------------------------


def test_a_block_rereading_its_own_tile_is_fine() -> None:
    xs = rng.standard_normal(1000).astype(np.float32)
    with cutile.check_races():
        z, _ = own_tile_twice(api.zeros([1000], f32).partition([64]), api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * xs)


def test_shared_input_read_by_every_block_is_fine() -> None:
    xs = rng.standard_normal(128).astype(np.float32)
    with cutile.check_races():
        z, _ = sums_all_of_x(api.zeros([128], f32).partition([16]), api.from_numpy(xs)).sync()
    ref = xs.reshape(8, 16).sum(axis=0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.tile(ref, 8), rtol=1e-5)


def test_inputs_that_are_strided_views_of_a_bigger_buffer_are_fine() -> None:
    big = rng.standard_normal((40, 64)).astype(np.float32)
    x = api.from_numpy(big)[3:35, ::2]  # 32 x 32 inside 40 x 64: strides (64, 2)
    with cutile.check_races():
        z, _ = twice2d(api.zeros([32, 32], f32).partition([8, 16]), x).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * big[3:35, ::2])


@pytest.mark.parametrize("num_blocks", [1, 3, None])
@pytest.mark.parametrize("group", [1, 2])
def test_persistent_schedule_is_race_free(num_blocks: int | None, group: int) -> None:
    xs = rng.standard_normal((150, 300)).astype(np.float32)
    z = api.full([150, 300], np.nan, f32).partition([32, 64]).persistent(num_blocks)
    with cutile.check_races():
        z, _ = scale(z, api.from_numpy(xs), G=group).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * xs)


# -- turning it on: environment and context manager --------------------------------------------


def test_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_INTERPRET", "check")
    with pytest.raises(cutile.RaceError):
        pairs_write_one_tile(*args16()).sync()
    for off in ("", "  "):
        monkeypatch.setenv("CUTILE_INTERPRET", off)
        pairs_write_one_tile(*args16()).sync()  # races silently, as without the detector
    monkeypatch.delenv("CUTILE_INTERPRET")
    pairs_write_one_tile(*args16()).sync()


def test_a_bad_environment_value_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_INTERPRET", "races")
    z, x = args16()
    with pytest.raises(cutile.LaunchError) as info:
        own_tile_twice(z, x).sync()
    err = info.value
    assert err.code == "CT6904"
    assert "CUTILE_INTERPRET='races'" in str(err) and "`check`" in str(err) and err.hint
    assert x.to_numpy()[1] == 1  # the launch did not take the tensors with it
    with cutile.check_races(), pytest.raises(cutile.LaunchError):  # a typo is never hidden
        own_tile_twice(*args16()).sync()


def test_context_manager_nests_and_switches_off() -> None:
    assert cutile.check_races is cutile.interpreter.check_races
    with cutile.check_races():
        with cutile.check_races():
            pass
        assert cutile.interpreter.checking()
        with pytest.raises(cutile.RaceError):
            pairs_write_one_tile(*args16()).sync()
    assert not cutile.interpreter.checking()
    pairs_write_one_tile(*args16()).sync()


def test_context_manager_covers_launches_waited_on_other_threads() -> None:
    errors: list[BaseException] = []
    op = pairs_write_one_tile(*args16())

    def wait() -> None:
        try:
            op.sync()
        except BaseException as exc:
            errors.append(exc)

    with cutile.check_races():
        t = threading.Thread(target=wait)
        t.start()
        t.join()
    assert len(errors) == 1 and isinstance(errors[0], cutile.RaceError)


# -- the examples ------------------------------------------------------------------------------

SMALL: dict[str, dict[str, Any]] = {
    "add": {"n": 50_003, "tile": 1024},
    "autotune_gemm": {"m": 70, "n": 40, "k": 24},
    "saxpy": {"n": 30_001, "tile": 512},
    "exp2d": {"m": 130, "n": 300},
    "head_permute": {"b": 2, "h": 4, "m": 64, "d": 64, "bm": 32},
    "attention": {"bh": 2, "seqs": (70, 64), "d": 16},
    "softmax": {"m": 20, "n": 70, "long_n": 300, "bk": 64},
    "layernorm": {"m": 20, "n": 70, "long_n": 300, "bk": 64},
    "rmsnorm": {"m": 20, "n": 70, "long_n": 300, "bk": 64},
    "persistent_gemm": {"m": 100, "n": 70, "k": 24, "blocks": 3},
    "batched_gemm": {"batch": 2, "m": 40, "n": 40, "k": 24},
    "split_k_gemm": {"m": 40, "n": 40, "k": 200, "splits": 3},
    "embedding": {"tokens": 50, "vocab": 30, "d": 40},
    "swiglu_mlp": {"m": 40, "d": 24, "f": 70},
    "histogram": {"n": 2000, "bins": 13, "tile": 256},
    "topk": {"m": 20, "n": 70, "k": 3, "bm": 8},
    "fp8_gemm": {"m": 70, "n": 40, "k": 48, "bm": 32, "bn": 16, "bk": 16},
    "streams": {"n": 3000, "tile": 256, "length": 2},
    "async_pipeline": {"n": 3000, "batches": 2, "steps": 4, "tile": 256},
    "cuda_graph": {"m": 24, "d": 40, "layers": 2, "replays": 2, "tiles": (16, 16, 16)},
    "raw_kernel": {"n": 10_007, "tile": 256},  # its tile kernel; the C++ one needs a GPU
    "interop_torch": {"m": 70, "n": 40, "bm": 32, "bn": 16},
    "multi_gpu": {"m": 64, "n": 48, "k": 40, "tiles": (32, 16, 16), "chunks": 2, "reps": 1},
}


def test_every_example_is_covered() -> None:
    assert {p.stem for p in EXAMPLES.glob("*.py")} == set(SMALL)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_runs_clean_under_the_detector(name: str, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CUTILE_INTERPRET", "check")
    load_example(name).main(**SMALL[name])  # each example checks every element itself
    assert capsys.readouterr().out.startswith(f"{name}:")
