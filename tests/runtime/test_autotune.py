"""`cutile.autotune`: configs checked, bound and compiled before they count, invalid ones
skipped with a logged reason, the choice cached on disk per kernel, device and shape class
and reused by a fresh process without tuning again; on the GPU, the fastest config wins."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from autotune_kernels import matmul, scale

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    f16,
    f32,
    load_tile_like,
    mma,
    num_tiles,
    zeros,
)
from cutile.errors import AutotuneError, ConfigError, LaunchError
from cutile.tuning import bench

pytestmark = pytest.mark.usefixtures("cache_dir")

PACKAGE_ROOT = str(Path(cutile.__file__).resolve().parents[1])
C = cutile.Config


@cutile.entry
def persistent_matmul(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
                      y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int],
                      BK: Const[int]):
    for i, j in z.iter_indices(group=2):
        acc = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            acc = mma(x.load_tile((BM, BK), (i, k)), y.load_tile((BK, BN), (k, j)), acc)
        z.store(acc, index=(i, j))


GOOD = [C({"BM": 32, "BN": 32, "BK": 16}), C({"BM": 64, "BN": 32, "BK": 32}, occupancy=2)]


def operands(m: int = 96, n: int = 80, k: int = 72, seed: int = 0
             ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((k, n)).astype(np.float16))


def run_gemm(tuned: Any, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Any]:
    op = tuned(api.zeros([a.shape[0], b.shape[1]], f32), api.from_numpy(a), api.from_numpy(b))
    z, _, _ = op.sync()
    assert isinstance(z, api.Tensor)  # passed whole, handed back whole
    return z.to_numpy(), op


def stored(cache: Path) -> list[Path]:
    return sorted((cache / "autotune").glob("*.json"))


def test_tuned_gemm_matches_numpy() -> None:
    tuned = cutile.autotune(matmul, configs=GOOD, key=["x", "y"])
    a, b = operands()
    got, op = run_gemm(tuned, a, b)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)
    if bench.can_time():
        assert op.choice.how == "benchmarked" and set(op.choice.times) == {0, 1}
    else:  # the interpreter cannot time: the first valid config
        assert op.config == GOOD[0] and op.choice.how == "first valid"
    assert op.binding.consts == op.config.consts


@pytest.fixture
def untimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Choose as the interpreter does, on either backend: the first valid config."""
    monkeypatch.setattr(bench, "can_time", lambda: False)


def test_invalid_configs_are_skipped_with_a_logged_reason(caplog: pytest.LogCaptureFixture,
                                                          untimed: None) -> None:
    caplog.set_level(logging.INFO, logger="cutile.autotune")
    configs = [C({"BM": 24, "BN": 32, "BK": 16}),       # not a power of two
               C({"BM": 4096, "BN": 8192, "BK": 16}),   # a tile past 2^24 elements
               C({"BM": 32, "BN": 32, "BK": 3}),        # an input tile of 3
               *GOOD]
    tuned = cutile.autotune(matmul, configs=configs)
    a, b = operands()
    got, op = run_gemm(tuned, a, b)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)
    assert op.choice.index == 3
    assert [(s["index"], s["code"]) for s in op.choice.skipped] == [
        (0, "CT3023"), (1, "CT3024"), (2, "CT3023")]
    text = caplog.text
    assert "skipping Config({'BK': 16, 'BM': 24, 'BN': 32})" in text
    assert "tile dimension 24 is not a power of two" in text
    assert "the interpreter cannot time kernels" in text
    assert "(2 of 5 valid)" in text


def test_no_valid_config_is_a_typed_error_and_the_arguments_stay_usable() -> None:
    tuned = cutile.autotune(matmul, configs=[C({"BM": 24, "BN": 32, "BK": 16}),
                                             C({"BM": 32, "BN": 48, "BK": 16})])
    a, b = operands()
    z, x, y = api.zeros([96, 80], f32), api.from_numpy(a), api.from_numpy(b)
    with pytest.raises(AutotuneError) as info:
        tuned(z, x, y)
    err = info.value
    assert err.code == "CT8022" and isinstance(err, ConfigError)
    assert err.kernel == "matmul" and [f["code"] for f in err.failures] == ["CT3023"] * 2
    assert "2 tried" in str(err) and err.hint
    back = pickle.loads(pickle.dumps(err))
    assert back.data() == err.data() and back.failures == err.failures
    json.dumps(err.data())
    # Trials wrote copies: the caller's tensors were never moved or written.
    assert (z.to_numpy() == 0).all() and (x.to_numpy() == a).all()
    assert stored(Path(os.environ["CUTILE_CACHE_DIR"])) == []


def test_timing_picks_the_fastest_on_copies_of_the_outputs(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # The GPU's timer, stood in for: a time per config by its tile, from the bound op.
    fake_us = {32: 30.0, 64: 10.0, 128: 20.0}
    seen: list[dict[str, Any]] = []

    def fake_time(op: Any, runnable: Any) -> float:
        consts = dict(op.consts)
        seen.append(consts)
        z = op.values[0]
        assert z.tile_shape == (consts["BM"], consts["BN"])
        return fake_us[consts["BM"]] * 1e-6

    monkeypatch.setattr(bench, "can_time", lambda: True)
    monkeypatch.setattr(bench, "time_op", fake_time)
    configs = [C({"BM": m, "BN": 32, "BK": 16}) for m in (32, 64, 128)]
    tuned = cutile.autotune(matmul, configs=configs)
    a, b = operands()
    z, x, y = api.full([96, 80], 7.0, f32), api.from_numpy(a), api.from_numpy(b)
    choice = tuned.choose(z, x, y)
    assert choice.config == configs[1] and choice.how == "benchmarked"
    assert {i: round(t * 1e6) for i, t in choice.times.items()} == {0: 30, 1: 10, 2: 20}
    assert len(seen) == 3 and tuned.stats["benchmarked"] == 1
    assert (z.to_numpy() == 7.0).all()  # the trials never touched the caller's output
    z, x, y = tuned(z, x, y).sync()
    np.testing.assert_allclose(z.to_numpy(), a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)
    assert len(seen) == 3 and tuned.stats["memory_hits"] == 1  # chosen once
    entry = json.loads(stored(Path(os.environ["CUTILE_CACHE_DIR"]))[0].read_text())
    assert entry["choice"]["how"] == "benchmarked" and entry["choice"]["index"] == 1
    assert entry["choice"]["times_us"] == {"0": 30.0, "1": 10.0, "2": 20.0}


SCRIPT = """
    import json, numpy as np
    import cutile
    from cutile import api
    from cutile.core import Const, Mut, Tensor, f32, load_tile_like

    @cutile.autotune(configs=[cutile.Config({"B": 48}), cutile.Config({"B": 64}),
                              cutile.Config({"B": 128})], key=["x"])
    @cutile.entry
    def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
        z.store(load_tile_like(x, z) * a)

    xs = np.arange(1000, dtype=np.float32)
    op = scale(api.zeros([1000], f32), api.from_numpy(xs), 2.0)
    z, _, _ = op.sync()
    assert (z.to_numpy() == xs * 2).all()
    print(json.dumps({"stats": scale.stats, "config": repr(op.config), "how": op.choice.how}))
"""


def run_script(path: Path, cache: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTILE_")}
    env.update(PYTHONPATH=PACKAGE_ROOT, CUTILE_CACHE_DIR=str(cache), CUTILE_QUIET="1",
               CUTILE_BACKEND="interpreter", CUTILE_LOG="info")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    out["log"] = r.stderr
    return out


def test_a_fresh_process_reuses_the_choice_on_disk(tmp_path: Path, cache_dir: Path) -> None:
    script = tmp_path / "tune_me.py"
    script.write_text(textwrap.dedent(SCRIPT))
    first = run_script(script, cache_dir)
    assert first["stats"]["tunings"] == 1 and first["stats"]["candidates"] == 3
    assert first["config"] == "Config({'B': 64})" and first["how"] == "first valid"
    assert "skipping Config({'B': 48})" in first["log"]
    (entry,) = stored(cache_dir)
    second = run_script(script, cache_dir)
    assert second["stats"] == {"tunings": 0, "benchmarked": 0, "candidates": 0,
                               "disk_hits": 1, "memory_hits": 0}
    assert second["config"] == "Config({'B': 64})" and second["how"] == "cached"
    assert f"cached in {entry}" in second["log"] and "skipping" not in second["log"]
    # `python -m cutile check` finds the kernel an autotuner wraps.
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT, "CUTILE_BACKEND": "interpreter"}
    check = subprocess.run([sys.executable, "-m", "cutile", "check", str(script)],
                           capture_output=True, text=True, timeout=120, env=env)
    assert check.returncode == 0 and "1 kernel(s)" in check.stdout, check.stdout + check.stderr
    # An edited kernel is another kernel: its choice is not reused.
    script.write_text(textwrap.dedent(SCRIPT).replace("* a)", "* a + 0.0)"))
    third = run_script(script, cache_dir)
    assert third["stats"]["tunings"] == 1 and len(stored(cache_dir)) == 2


def test_the_key_separates_shape_classes(cache_dir: Path) -> None:
    tuned = cutile.autotune(scale, configs=[C({"B": 64}), C({"B": 128})], key=["x"])

    def call(n: int, dtype: Any = f32) -> None:
        z, _, _ = tuned(api.zeros([n], f32), api.zeros([n], dtype), 1.0).sync()
        assert z.shape == (n,)

    call(1000)
    call(1024)  # 1000 and 1024 round up alike: one class
    assert tuned.stats["tunings"] == 1 and tuned.stats["memory_hits"] == 1
    call(1025)  # 2048
    assert tuned.stats["tunings"] == 2 and len(stored(cache_dir)) == 2
    assert sorted(json.loads(s)["key"][0][1]["shape"] for s in tuned.choices) == [[1024], [2048]]
    # A key function: one class for every size.
    by_dtype = cutile.autotune(scale, configs=[C({"B": 64})], key=lambda **a: a["x"].dtype.name)
    for n in (10, 5000):
        by_dtype(api.zeros([n], f32), api.zeros([n], f32), 1.0).sync()
    assert by_dtype.stats["tunings"] == 1


def test_consts_given_at_the_call_are_part_of_the_class() -> None:
    tuned = cutile.autotune(matmul, configs=[C({"BM": 32, "BN": 32}), C({"BM": 64, "BN": 64})])
    a, b = operands()
    for bk in (16, 32, 16):
        z, _, _ = tuned(api.zeros([96, 80], f32), api.from_numpy(a), api.from_numpy(b),
                        BK=bk).sync()
        np.testing.assert_allclose(z.to_numpy(), a.astype(np.float64) @ b, rtol=1e-2,
                                   atol=1e-2)
    assert tuned.stats["tunings"] == 2 and tuned.stats["memory_hits"] == 1


def test_a_partition_passed_keeps_its_tiles() -> None:
    tuned = cutile.autotune(matmul, configs=[C({"BK": 8}), C({"BK": 16})])
    a, b = operands()
    z = api.zeros([96, 80], f32).partition([32, 16])
    op = tuned(z, api.from_numpy(a), api.from_numpy(b))
    z, _, _ = op.sync()
    assert isinstance(z, api.Partition) and z.tile_shape == (32, 16)
    np.testing.assert_allclose(z.unpartition().to_numpy(), a.astype(np.float64) @ b,
                               rtol=1e-2, atol=1e-2)
    # Configs that contradict the partition's tiles are skipped (CT6103 at binding).
    clash = cutile.autotune(matmul, configs=[C({"BM": 64, "BK": 16}), C({"BM": 32, "BK": 16})])
    op = clash(api.zeros([96, 80], f32).partition([32, 16]), api.from_numpy(a),
               api.from_numpy(b))
    op.sync()
    assert op.choice.index == 1 and op.choice.skipped[0]["code"] == "CT6103"


def test_persistent_outputs_take_the_configs_block_count(untimed: None) -> None:
    configs = [C({"BM": 32, "BN": 32, "BK": 16}, num_blocks=3), C({"BM": 64, "BN": 64, "BK": 32})]
    tuned = cutile.autotune(persistent_matmul, configs=configs)
    a, b = operands()
    op = tuned(api.zeros([96, 80], f32), api.from_numpy(a), api.from_numpy(b))
    assert op.binding.grid == (3, 1, 1)  # 9 tiles, 3 blocks
    z, _, _ = op.sync()
    np.testing.assert_allclose(z.to_numpy(), a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2)
    assert op.choice.skipped == []


def test_tuned_ops_compose() -> None:
    tuned = cutile.autotune(scale, configs=[C({"B": 128})])
    xs = np.arange(300, dtype=np.float32)

    async def go() -> np.ndarray:
        z, _, _ = await tuned(api.zeros([300], f32), api.from_numpy(xs), 2.0)
        return z.to_numpy()

    np.testing.assert_array_equal(asyncio.run(go()), xs * 2)
    (z1, _, _), (z2, _, _) = cutile.zip(
        tuned(api.zeros([300], f32), api.from_numpy(xs), 1.0),
        tuned(api.zeros([300], f32), api.from_numpy(xs), 3.0)).sync()
    np.testing.assert_array_equal(z1.to_numpy(), xs)
    np.testing.assert_array_equal(z2.to_numpy(), xs * 3)
    w, _, _ = tuned(api.zeros([300], f32), api.from_numpy(xs), 2.0).then(
        lambda z, x, a: tuned(api.zeros([300], f32), z, 0.5)).sync()
    np.testing.assert_array_equal(w.to_numpy(), xs)
    with pytest.warns(cutile.OpNeverRunWarning):
        tuned(api.zeros([300], f32), api.from_numpy(xs), 2.0)  # dropped: warns like a kernel op
        import gc

        gc.collect()


def test_cutile_autotune_0_takes_the_first_valid_config_and_caches_nothing(
        monkeypatch: pytest.MonkeyPatch, cache_dir: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cutile.autotune")
    monkeypatch.setenv("CUTILE_AUTOTUNE", "0")
    monkeypatch.setattr(bench, "can_time", lambda: True)  # even where it could time
    tuned = cutile.autotune(scale, configs=[C({"B": 48}), C({"B": 64}), C({"B": 128})])
    op = tuned(api.zeros([100], f32), api.zeros([100], f32), 1.0)
    op.sync()
    assert op.config == C({"B": 64}) and op.choice.how == "first valid"
    assert tuned.stats["candidates"] == 2 and stored(cache_dir) == []
    assert "CUTILE_AUTOTUNE=0" in caplog.text


def test_retune_tunes_again_and_bad_values_are_typed_errors(
        monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    def fresh() -> Any:
        t = cutile.autotune(scale, configs=[C({"B": 64})])
        t(api.zeros([100], f32), api.zeros([100], f32), 1.0).sync()
        return t

    assert fresh().stats["tunings"] == 1
    assert fresh().stats["disk_hits"] == 1
    monkeypatch.setenv("CUTILE_AUTOTUNE", "retune")
    assert fresh().stats["tunings"] == 1
    monkeypatch.setenv("CUTILE_AUTOTUNE", "sometimes")
    with pytest.raises(ConfigError) as info:
        fresh()
    assert info.value.code == "CT8023" and "`retune`" in str(info.value)


def test_a_corrupt_entry_is_tuned_again(cache_dir: Path, caplog: pytest.LogCaptureFixture
                                        ) -> None:
    caplog.set_level(logging.WARNING, logger="cutile.autotune")
    tuned = cutile.autotune(scale, configs=[C({"B": 64})])
    tuned(api.zeros([100], f32), api.zeros([100], f32), 1.0).sync()
    (entry,) = stored(cache_dir)
    entry.write_text("{not json")
    again = cutile.autotune(scale, configs=[C({"B": 64})])
    again(api.zeros([100], f32), api.zeros([100], f32), 1.0).sync()
    assert again.stats["tunings"] == 1 and "unreadable" in caplog.text
    assert json.loads(entry.read_text())["choice"]["index"] == 0  # rewritten whole


def test_cache_clear_removes_the_choices(cache_dir: Path) -> None:
    cutile.autotune(scale, configs=[C({"B": 64})])(
        api.zeros([100], f32), api.zeros([100], f32), 1.0).sync()
    assert len(stored(cache_dir)) == 1

    def cli(*args: str) -> str:
        env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
        r = subprocess.run([sys.executable, "-m", "cutile", "cache", *args],
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert "autotuning choices: 1" in cli("info")
    assert "and 1 autotuning choices" in cli("clear")
    assert stored(cache_dir) == []


def test_cache_dir_off_keeps_choices_in_memory(monkeypatch: pytest.MonkeyPatch,
                                               cache_dir: Path) -> None:
    monkeypatch.setenv("CUTILE_CACHE_DIR", "off")
    tuned = cutile.autotune(scale, configs=[C({"B": 64})])
    for _ in range(2):
        tuned(api.zeros([100], f32), api.zeros([100], f32), 1.0).sync()
    assert tuned.stats["tunings"] == 1 and tuned.stats["memory_hits"] == 1
    assert not cache_dir.exists()


def test_mistakes_in_the_search_space_are_typed_errors() -> None:
    x = api.zeros([100], f32)
    with pytest.raises(ConfigError) as info:
        cutile.autotune(scale, configs=[C({"BLOCK": 64})])(api.zeros([100], f32), x, 1.0)
    assert info.value.code == "CT8021" and "`BLOCK`" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cutile.autotune(scale, configs=[C({"B": 64})], key=["w"])(api.zeros([100], f32), x, 1.0)
    assert info.value.code == "CT8021" and "`w`" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cutile.autotune(scale, configs=[C({"B": 64})])(api.zeros([100], f32), x, 1.0, B=32)
    assert info.value.code == "CT8021" and "tuned by the configs" in str(info.value)
    with pytest.raises(LaunchError) as launch:
        cutile.autotune(scale, configs=[C({"B": 64})])(api.zeros([100], f32), x)
    assert launch.value.code == "CT6104" and "`a`" in str(launch.value)
    for bad in (lambda: cutile.autotune(scale, configs=[]),
                lambda: cutile.autotune(scale, configs=[{"B": 64}]),  # type: ignore[list-item]
                lambda: cutile.autotune(scale.fn, configs=[C({"B": 64})]),
                lambda: cutile.autotune(scale, configs=[C({"B": 64})], key="x"),
                lambda: C({"B": "64"}), lambda: C({"B": 64}, num_blocks=0)):
        with pytest.raises(ConfigError) as info:
            bad()
        assert info.value.code == "CT8021", info.value
    for timeout in (0, -1.0, "60", True, float("nan")):
        with pytest.raises(ConfigError) as info:
            cutile.autotune(scale, configs=[C({"B": 64})], compile_timeout=timeout)  # type: ignore[arg-type]
        assert info.value.code == "CT8021" and "compile_timeout" in str(info.value)
    with pytest.raises(ConfigError) as info:
        C({"B": 64}, num_ctas=3)
    assert info.value.code == "CT8020"
    assert C({"B": np.int64(64)}, occupancy=2) == C({"B": 64}, occupancy=2)
    assert repr(C({"B": 64}, occupancy=cutile.ByTarget(sm_90=2), num_blocks=4)) == (
        "Config({'B': 64}, occupancy=ByTarget(default=None, per_arch={'sm_90': 2}), "
        "num_blocks=4)")


def test_each_candidate_compiles_under_the_compile_timeout(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Every candidate's bind and compile run inside `tileiras.time_limit` with the tuner's
    `compile_timeout` (the GPU test below sees a slow candidate skipped); without one, the
    usual limit applies."""
    from cutile.backend import tileiras
    from cutile.kernel import EntryKernel

    seen: list[Any] = []
    real = EntryKernel._runnable

    def spy(self: EntryKernel, spec: Any, device: int | None = None) -> Any:
        seen.append(tileiras._LIMIT.get())
        return real(self, spec, device)

    monkeypatch.setattr(EntryKernel, "_runnable", spy)
    x = api.from_numpy(np.arange(100, dtype=np.float32))
    for timeout, expected, b in ((2.5, (2.5, "`compile_timeout`"), 32), (None, None, 16)):
        seen.clear()     # (other configs each time: a choice on disk would not tune again)
        tuned = cutile.autotune(scale, configs=[C({"B": b}), C({"B": 64})],
                                compile_timeout=timeout)
        tuned.choose(api.zeros([100], f32), x, 2.0)
        assert seen and all(limit == expected for limit in seen), seen
    assert tileiras._LIMIT.get() is None


def test_a_candidate_past_its_compile_timeout_is_not_compiled_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate stopped by `compile_timeout` (CT7005) is skipped by the next tuning of
    the same tuner (another shape class) without a compile, and says so; without a
    `compile_timeout` nothing is remembered (the usual limit: the user asked to wait)."""
    from cutile.errors import CompileError
    from cutile.kernel import EntryKernel

    compiles: list[int] = []
    real = EntryKernel._runnable

    def slow_at_512(self: EntryKernel, spec: Any, device: int | None = None) -> Any:
        b = dict(spec.consts)["B"]
        compiles.append(b)
        if b == 512:
            raise CompileError("tileiras did not finish within 5 s", code="CT7005")
        return real(self, spec, device)

    monkeypatch.setattr(EntryKernel, "_runnable", slow_at_512)
    for timeout, compiled_again, other in ((5.0, False, 128), (None, True, 64)):
        # (another search space each time: a choice on disk would not tune again)
        tuned = cutile.autotune(scale, configs=[C({"B": 512}), C({"B": other})],
                                compile_timeout=timeout)
        compiles.clear()
        for n in (100, 3000, 70000):               # three shape classes
            choice = tuned.choose(api.zeros([n], f32), api.zeros([n], f32), 1.0)
            assert choice.index == 1 and choice.skipped[0]["code"] == "CT7005"
        assert compiles.count(512) == (3 if compiled_again else 1), compiles
        if not compiled_again:
            assert "not compiled again" in choice.skipped[0]["reason"]


def test_the_decorator_form_keeps_the_kernel() -> None:
    @cutile.autotune(configs=[C({"B": 64})], key=["x"])
    @cutile.entry
    def double(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(load_tile_like(x, z) * 2.0)

    assert isinstance(double, cutile.Autotuned) and double.kernel.name == "double"
    assert double.__name__ == "double" and "over 1 configs" in repr(double)
    z, _ = double(api.zeros([10], f32), api.ones([10], f32)).sync()
    assert (z.to_numpy() == 2).all()


class FakeDriver:
    """The few driver calls `bench.measure` makes, with launches of `us` microseconds; a
    `fault` makes event synchronization fail as after an illegal address."""

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self, us: float, fault: bool = False) -> None:
        self.us, self.fault, self.launches, self.recorded = us, fault, 0, {}

    def launch(self) -> None:
        self.launches += 1

    def cuEventCreate(self, flags: int) -> tuple[int, object]:
        return 0, object()

    def cuEventRecord(self, event: object, stream: object) -> tuple[int]:
        self.recorded[id(event)] = self.launches
        return (0,)

    def cuEventSynchronize(self, event: object) -> tuple[int]:
        return (700,) if self.fault else (0,)

    def cuEventElapsedTime(self, start: object, stop: object) -> tuple[int, float]:
        return 0, (self.recorded[id(stop)] - self.recorded[id(start)]) * self.us * 1e-3

    def cuEventDestroy(self, event: object) -> tuple[int]:
        return (0,)

    def cuGetErrorName(self, err: int) -> tuple[int, bytes]:
        return 0, b"CUDA_ERROR_ILLEGAL_ADDRESS"

    def cuGetErrorString(self, err: int) -> tuple[int, bytes]:
        return 0, b"an illegal memory access was encountered"


def test_measure_times_batches_between_events(monkeypatch: pytest.MonkeyPatch) -> None:
    from cutile.runtime import driver

    fake = FakeDriver(us=5.0)
    monkeypatch.setattr(driver, "_driver", lambda: fake)
    monkeypatch.setattr(driver, "ensure_current", lambda: None)
    monkeypatch.setattr(driver, "state", lambda: type("S", (), {"stream": None})())
    assert bench.measure(fake.launch) == pytest.approx(5e-6)
    reps = min(bench.MAX_REPS, int(bench.TARGET_S / 5e-6))
    assert fake.launches == bench.WARMUP + 1 + bench.TRIALS * reps
    faulty = FakeDriver(us=5.0, fault=True)
    monkeypatch.setattr(driver, "_driver", lambda: faulty)
    with pytest.raises(cutile.DeviceError) as info:
        bench.measure(faulty.launch)
    assert info.value.code == "CT6903" and "ILLEGAL_ADDRESS" in str(info.value)


@pytest.mark.gpu
def test_gpu_tuning_picks_the_fastest_gemm_config() -> None:
    """On the GPU: three GEMM tilings of very different speed; the tuner's pick is the
    fastest when each is timed again on its own, and its result is right."""
    configs = [C({"BM": 16, "BN": 16, "BK": 16}), C({"BM": 64, "BN": 64, "BK": 32}),
               C({"BM": 128, "BN": 128, "BK": 64}, occupancy=1)]
    tuned = cutile.autotune(matmul, configs=configs, key=["x", "y"])
    m = n = k = 2048
    a, b = operands(m, n, k, seed=5)
    got, op = run_gemm(tuned, a, b)
    choice = op.choice
    assert choice.how == "benchmarked" and set(choice.times) == {0, 1, 2}
    assert choice.index == min(choice.times, key=choice.times.__getitem__)
    assert choice.index != 0, choice.times  # 16x16 tiles are far slower
    # Timed again, each alone: the pick is within 15% of the fastest.
    again = {}
    for i, cfg in enumerate(configs):
        alone = cutile.autotune(matmul, configs=[cfg], key=["x", "y"])
        again[i] = alone.choose(api.zeros([m, n], f32), api.from_numpy(a),
                                api.from_numpy(b)).times[0]
    assert again[choice.index] <= 1.15 * min(again.values()), (choice.times, again)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-1)
    # A second tuner of the same kernel reads the choice from disk: no benchmark.
    second = cutile.autotune(matmul, configs=configs, key=["x", "y"])
    _, op2 = run_gemm(second, a, b)
    assert op2.choice.how == "cached" and op2.config == choice.config
    assert second.stats["benchmarked"] == 0 and second.stats["disk_hits"] == 1


@pytest.mark.gpu
def test_gpu_tuning_skips_a_candidate_past_its_compile_timeout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate whose tileiras runs past `compile_timeout` is stopped after it and
    skipped (CT7005); the next one compiles and runs. The first compile of the test goes
    to a wrapper that sleeps (real slow compiles exist, e.g. LayerNorm bf16 rows in an
    unrolled TMA loop took over 300 s, but not one that is slow on every release); every
    later call runs the real tileiras in its own environment."""
    import shlex
    import time

    from cutile.backend.tileiras import find_tileiras

    real = find_tileiras()
    once = tmp_path / "slept"
    wrapper = tmp_path / "tileiras"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in real.env.items()
                      if k.isidentifier())
    slow_first = (f'case "$*" in *--gpu-name*) [ -e {once} ] || {{ touch {once}; sleep 600; }};; '
                  "esac\n")      # compiles only: `--version` and the like answer at once
    wrapper.write_text(f"#!/bin/sh\n{slow_first}{exports}"
                       f"exec {shlex.quote(str(real.path))} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("CUTILE_TILEIRAS", str(wrapper))
    # tiles no other test compiles, so that the first call is the first candidate's
    tuned = cutile.autotune(scale, configs=[C({"B": 512}), C({"B": 256})], compile_timeout=5)
    xs = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    start = time.perf_counter()
    z, *_ = tuned(api.zeros([4096], f32), api.from_numpy(xs), 3.0).sync()
    assert time.perf_counter() - start < 60
    choice = tuned.choices[next(iter(tuned.choices))]
    assert choice.index == 1, choice
    assert [(s["index"], s["code"]) for s in choice.skipped] == [(0, "CT7005")], choice.skipped
    assert "within 5 s" in choice.skipped[0]["reason"], choice.skipped
    np.testing.assert_array_equal(z.to_numpy(), xs * np.float32(3.0))
    # another shape class: the slow candidate is not compiled (nor waited for) again
    again = tuned.choose(api.zeros([70000], f32), api.zeros([70000], f32), 1.0)
    assert again.index == 1 and "not compiled again" in again.skipped[0]["reason"], again
