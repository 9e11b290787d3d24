"""`cutile.autotune` attacked: choice files edited or forged on disk, a class's choice that
cannot run other extents of the class, tensors on a device other than the current one, a
`key` function that fails. Each is ignored, tuned again or a typed error; none raises an
untyped exception, runs an unchecked config or loses the caller's data."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from autotune_kernels import matmul, scale

import cutile
from cutile import api
from cutile.core import (
    f32,
)
from cutile.errors import ConfigError, LaunchError
from cutile.tuning import bench

pytestmark = pytest.mark.usefixtures("cache_dir")

C = cutile.Config
rng = np.random.default_rng(7)


def scaled(tuned: Any, n: int = 100, device: int | None = None) -> Any:
    """Run `tuned` on random data; check the result against numpy; the op."""
    xs = rng.standard_normal(n).astype(np.float32)
    op = tuned(api.full([n], np.nan, f32, device=device), api.from_numpy(xs, device=device),
               3.0)
    z, _, _ = op.sync()
    np.testing.assert_allclose(z.to_numpy(), xs * 3.0, rtol=1e-6)
    return op


def entry_of(cache: Path) -> Path:
    (entry,) = sorted((cache / "autotune").glob("*.json"))
    return entry


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda choice: choice.update({key: value})


FORGED = {
    "times not a map": _set("times_us", [1, 2]),
    "times keyed by a word": _set("times_us", {"fast": 1.0}),
    "a time that is a word": _set("times_us", {"0": "fast"}),
    "a time that is null": _set("times_us", {"0": None}),
    "a negative time": _set("times_us", {"0": -5.0}),
    "skipped not a list": _set("skipped", 5),
    "skipped of numbers": _set("skipped", [1, 2]),
}


@pytest.mark.parametrize("name", sorted(FORGED))
def test_an_edited_entry_is_ignored_and_tuned_again(name: str, cache_dir: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    configs = [C({"B": 64}), C({"B": 128})]
    scaled(cutile.autotune(scale, configs=configs))
    entry = entry_of(cache_dir)
    data = json.loads(entry.read_text())
    FORGED[name](data["choice"])
    entry.write_text(json.dumps(data))
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    again = cutile.autotune(scale, configs=configs)
    op = scaled(again)  # was ValueError, TypeError or AttributeError from the file's values
    assert again.stats["tunings"] == 1 and again.stats["disk_hits"] == 0
    assert op.choice.how == "first valid" and "tuning again" in caplog.text
    assert json.loads(entry.read_text())["choice"]["times_us"] == {}  # rewritten whole


def test_an_entry_nested_past_the_stack_is_unreadable_not_a_crash(
        cache_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    scaled(cutile.autotune(scale, configs=[C({"B": 64})]))
    entry_of(cache_dir).write_text("[" * 200_000)  # json.loads: RecursionError
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    again = cutile.autotune(scale, configs=[C({"B": 64})])
    scaled(again)
    assert again.stats["tunings"] == 1 and "unreadable" in caplog.text


def test_a_forged_choice_of_a_config_that_fails_is_never_run(
        cache_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    configs = [C({"B": 48}), C({"B": 64})]  # 48: not a power of two, skipped
    first = scaled(cutile.autotune(scale, configs=configs))
    assert first.config == configs[1]
    entry = entry_of(cache_dir)
    data = json.loads(entry.read_text())
    data["choice"].update(index=0, config=configs[0].to_json())  # forged: the failing one
    entry.write_text(json.dumps(data))
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    again = cutile.autotune(scale, configs=configs)
    op = scaled(again)  # was KernelCheckError CT3023 at the op's start
    assert op.config == configs[1] and op.binding.consts["B"] == 64
    assert again.stats["disk_hits"] == 1 and again.stats["tunings"] == 1
    assert "cannot run these arguments" in caplog.text and "CT3023" in caplog.text


def gemm_call(tuned: Any, k1: int, k2: int) -> Any:
    a = rng.standard_normal((64, k1)).astype(np.float16)
    b = rng.standard_normal((k2, 32)).astype(np.float16)
    op = tuned(api.full([64, 32], np.nan, f32), api.from_numpy(a), api.from_numpy(b))
    z, _, _ = op.sync()
    k = min(k1, k2)  # tiles past an extent read zeros
    np.testing.assert_allclose(z.to_numpy(), a[:, :k].astype(np.float64) @ b[:k], rtol=1e-2,
                               atol=1e-2)
    return op


def test_a_class_choice_other_extents_of_the_class_refuse_is_tuned_for_them(
        caplog: pytest.LogCaptureFixture) -> None:
    small, large = C({"BM": 32, "BN": 32, "BK": 16}), C({"BM": 32, "BN": 32, "BK": 64})
    tuned = cutile.autotune(matmul, configs=[small, large])
    assert gemm_call(tuned, 64, 64).config == small
    # 60 and 40 round up to 64 as well: the class's choice, BK = 16, is refused by the
    # launch check cdiv(60, 16) <= cdiv(40, 16); BK = 64 runs them. Was LaunchError CT6200.
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    assert gemm_call(tuned, 60, 40).config == large
    assert "CT6200" in caplog.text and tuned.stats["tunings"] == 2
    assert gemm_call(tuned, 60, 40).config == large  # tuned once for them
    assert tuned.stats["tunings"] == 2
    assert gemm_call(tuned, 64, 64).config == small  # the class keeps its choice


def test_no_config_runs_the_other_extents_a_typed_error() -> None:
    tuned = cutile.autotune(matmul, configs=[C({"BM": 32, "BN": 32, "BK": 16})])
    gemm_call(tuned, 64, 64)
    a, b = np.ones((64, 60), np.float16), np.ones((40, 32), np.float16)
    with pytest.raises(ConfigError) as info:
        tuned(api.zeros([64, 32], f32), api.from_numpy(a), api.from_numpy(b))
    assert info.value.code == "CT8022"
    assert [f["code"] for f in info.value.failures] == ["CT6200"]


@pytest.mark.usefixtures("one_process_two_devices")
def test_tensors_on_another_device_are_tuned_on_it(cache_dir: Path) -> None:
    tuned = cutile.autotune(scale, configs=[C({"B": 64}), C({"B": 128})])
    # The current device is 0: the trials' scratch copies were made there, and every
    # config was refused (CT6113, two devices in one launch): AutotuneError CT8022.
    op = scaled(tuned, device=1)
    assert op.binding.values[0].device == 1 and op.config == C({"B": 64})
    assert tuned.stats["tunings"] == 1
    # The other device: a choice of its own, here from disk (a device of the same kind,
    # as the interpreter's devices are: the file names the kind, not the ordinal).
    scaled(tuned, device=0)
    assert tuned.stats["tunings"] == 1 and tuned.stats["disk_hits"] == 1
    scaled(tuned, device=1)
    assert tuned.stats["memory_hits"] == 1
    xs = api.zeros([100], f32, device=1)
    with pytest.raises(LaunchError) as info:  # two devices: one typed refusal, no tuning
        tuned(api.zeros([100], f32, device=0), xs, 1.0)
    assert info.value.code == "CT6113" and tuned.stats["tunings"] == 1


def test_a_key_function_that_fails_is_a_config_error() -> None:
    def key(**args: Any) -> Any:
        return args["x"].shape[5]  # IndexError

    tuned = cutile.autotune(scale, configs=[C({"B": 64})], key=key)
    z = api.zeros([10], f32)
    with pytest.raises(ConfigError) as info:
        tuned(z, api.zeros([10], f32), 1.0)
    assert info.value.code == "CT8021" and "IndexError" in str(info.value)
    assert isinstance(info.value.__cause__, IndexError)
    assert (z.to_numpy() == 0).all()  # the caller's output is still theirs


@pytest.mark.parametrize("residue", [4, 8, 0])
def test_a_trial_specializes_as_the_launch_does(residue: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # An output in another library's memory 4 bytes past a 64-byte boundary: the trial's
    # scratch copy was a fresh (aligned) allocation, so the trial timed the align16 kernel
    # and the launch ran the other one.
    timed: list[Any] = []

    def fake_time(op: Any, runnable: Any) -> float:
        timed.append(op.binding.spec)
        return 1e-6

    monkeypatch.setattr(bench, "can_time", lambda: True)
    monkeypatch.setattr(bench, "time_op", fake_time)
    raw = np.zeros(400 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + residue
    out = raw[start:start + 400].view(np.float32)
    out[:] = rng.standard_normal(100)
    xs = rng.standard_normal(100).astype(np.float32)
    tuned = cutile.autotune(scale, configs=[C({"B": 32}), C({"B": 64})])
    op = tuned(cutile.unsafe.from_dlpack_exclusive(out), api.from_numpy(xs), 2.0)
    assert [s.tensor("z") for s in timed] == [op.binding.spec.tensor("z")] * 2
    assert op.binding.spec.tensor("z").base_align16 is (residue == 0)
    op.sync()
    np.testing.assert_allclose(out, xs * 2.0, rtol=1e-6)


def test_a_failed_call_leaves_the_callers_output_usable() -> None:
    # An adversarial review (2026-12-07): an output passed whole was partitioned for the
    # launch (consuming the caller's handle); when the launch was refused, or failed to
    # start, only the partition came back and the caller's tensor was gone (CT5002).
    tuned = cutile.autotune(matmul, configs=[C({"BM": 32, "BN": 32, "BK": 16})])
    gemm_call(tuned, 64, 64)
    a = rng.standard_normal((64, 60)).astype(np.float16)
    b = rng.standard_normal((40, 32)).astype(np.float16)
    z = api.from_numpy(rng.standard_normal((64, 32)).astype(np.float32))
    before = z.to_numpy()
    with pytest.raises(ConfigError) as info:  # every config refuses these extents
        tuned(z, api.from_numpy(a), api.from_numpy(b))
    assert info.value.code == "CT8022"
    np.testing.assert_array_equal(z.to_numpy(), before)

    scaled_ = cutile.autotune(scale, configs=[C({"B": 64}), C({"B": 128})])
    xs = rng.standard_normal(100).astype(np.float32)
    z, x = api.full([100], 7.0, f32), api.from_numpy(xs)
    closed = cutile.Stream()
    closed.close()
    with pytest.raises(cutile.BorrowError) as info:  # fails to start: a closed stream
        scaled_(z, x, 3.0).sync_on(closed)
    assert info.value.code == "CT5061"
    np.testing.assert_array_equal(z.to_numpy(), 7.0)
    z, _, _ = scaled_(z, x, 3.0).sync()  # and it runs with the caller's tensor
    np.testing.assert_allclose(z.to_numpy(), xs * 3.0, rtol=1e-6)
