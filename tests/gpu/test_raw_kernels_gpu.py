"""Raw CUDA C++ kernels on the GPU: numerics against numpy on random inputs, chains with
tile kernels (`then`, `zip`, sequential ops sharing tensors), atomics, LTO-linked device
code, templates, dynamic shared memory past the 48 KiB default, and the host rules while a
raw op holds its tensors (moved in, ledger conflicts, dropped without running)."""

from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

import cutile
from cutile import api, unsafe
from cutile.core import Const, Mut, Tensor, f32, i32, load_tile_like

pytestmark = [pytest.mark.gpu, pytest.mark.nvrtc]

AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
axpy = unsafe.raw_kernel(AXPY, "axpy", [unsafe.scalar("a", "float"), unsafe.read("x", f32),
                                        unsafe.write("y", f32), unsafe.scalar("n", "int")],
                         block=256)

HIST = r"""
extern "C" __global__ void hist(const int* bins, int* counts, long long n, int nbins) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && bins[i] >= 0 && bins[i] < nbins) atomicAdd(&counts[bins[i]], 1);
}
"""
hist = unsafe.raw_kernel(HIST, "hist", [unsafe.read("bins", i32), unsafe.atomic("counts", i32),
                                        unsafe.scalar("n", "long long"),
                                        unsafe.scalar("nbins", "int")], block=128)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def randn(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n, dtype=np.float32)


def close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-6, atol=2e-6)


def test_axpy_matches_numpy_and_hands_its_arguments_back() -> None:
    n = 100_003
    xs, ys = randn(n, 1), randn(n, 2)
    x, y = api.from_numpy(xs), api.from_numpy(ys)
    a, x2, y2, n2 = axpy(-1.25, x, y, n, grid=-(-n // 256)).sync()
    assert (a, n2) == (-1.25, n) and x2 is x and y2 is y
    close(y.to_numpy(), -1.25 * xs.astype(np.float64) + ys)
    np.testing.assert_array_equal(x.to_numpy(), xs)  # read, never written


def test_a_raw_kernel_then_a_tile_kernel_share_tensors() -> None:
    n = 50_000
    xs, ys = randn(n, 3), randn(n, 4)
    x, y = api.from_numpy(xs), api.from_numpy(ys)
    z = api.full([n], np.nan, f32).partition([1024])
    z, y2, x2 = axpy(2.0, x, y, n, grid=-(-n // 256)).then(
        lambda a, x, y, n: add(z, y, x)).sync()
    assert x2 is x and y2 is y
    axpy64 = 2.0 * xs.astype(np.float64) + ys
    close(y.to_numpy(), axpy64)
    close(z.unpartition().to_numpy(), axpy64 + xs)


def test_a_tile_kernel_then_a_raw_kernel_writing_its_partition() -> None:
    scale = unsafe.raw_kernel(
        'extern "C" __global__ void scale(float* y, float s, int n) {'
        ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= s; }',
        "scale", [unsafe.write("y", f32), unsafe.scalar("s", "float"),
                  unsafe.scalar("n", "int")], block=128)
    n = 10_000
    xs, ys = randn(n, 5), randn(n, 6)
    z = api.zeros([n], f32).partition([512])
    z, _, _ = add(z, api.from_numpy(xs), api.from_numpy(ys)).then(
        lambda z, x, y: scale(z, 0.5, n, grid=-(-n // 128))).sync()
    assert isinstance(z, api.Partition)  # handed back as passed
    close(z.unpartition().to_numpy(), 0.5 * (xs.astype(np.float64) + ys))


def test_atomic_counts_match_bincount() -> None:
    n, nbins = 200_000, 37
    bins = np.random.default_rng(7).integers(-3, nbins + 3, n).astype(np.int32)
    counts = api.zeros([nbins], i32)
    _, counts, _, _ = hist(api.from_numpy(bins), counts, n, nbins, grid=-(-n // 128)).sync()
    inside = bins[(bins >= 0) & (bins < nbins)]
    np.testing.assert_array_equal(counts.to_numpy(), np.bincount(inside, minlength=nbins))


def test_zip_runs_a_raw_and_a_tile_op_side_by_side() -> None:
    n = 4096
    xs, ys, us, vs = randn(n, 8), randn(n, 9), randn(n, 10), randn(n, 11)
    z = api.zeros([n], f32).partition([256])
    (_, _, y, _), (z, _, _) = cutile.zip(
        axpy(3.0, api.from_numpy(xs), api.from_numpy(ys), n, grid=n // 256),
        add(z, api.from_numpy(us), api.from_numpy(vs))).sync()
    close(y.to_numpy(), 3.0 * xs.astype(np.float64) + ys)
    close(z.unpartition().to_numpy(), us.astype(np.float64) + vs)


def test_await_runs_a_raw_op() -> None:
    n = 1000
    xs, ys = randn(n, 12), randn(n, 13)
    y = api.from_numpy(ys)

    async def main() -> None:
        await axpy(1.0, api.from_numpy(xs), y, n, grid=4)

    asyncio.run(main())
    close(y.to_numpy(), xs.astype(np.float64) + ys)


def test_a_linked_and_a_template_kernel_run() -> None:
    calls = r"""
    extern "C" __device__ float shifted(float v, float by);
    extern "C" __global__ void shift(float* y, float by, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = shifted(y[i], by);
    }"""
    helper = 'extern "C" __device__ float shifted(float v, float by) { return v * 0.5f + by; }'
    shift = unsafe.raw_kernel(calls, "shift", [unsafe.write("y", f32),
                                               unsafe.scalar("by", "float"),
                                               unsafe.scalar("n", "int")],
                              link=[helper], block=64)
    n = 3000
    ys = randn(n, 14)
    y, _, _ = shift(api.from_numpy(ys), 1.5, n, grid=-(-n // 64)).sync()
    close(y.to_numpy(), ys.astype(np.float64) * 0.5 + 1.5)

    template = r"""template <typename T> __global__ void scale(T* y, T by, long long n) {
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= by; }"""
    scale = unsafe.raw_kernel(template, "scale<double>", [
        unsafe.write("y", "f64"), unsafe.scalar("by", "double"),
        unsafe.scalar("n", "int64_t")], block=128)
    ds = np.random.default_rng(15).standard_normal(n)
    y64, _, _ = scale(api.from_numpy(ds), -3.0, n, grid=-(-n // 128)).sync()
    np.testing.assert_array_equal(y64.to_numpy(), ds * -3.0)


def test_dynamic_shared_memory_past_48_kib() -> None:
    # each block stages 16384 floats (64 KiB) in shared memory and writes their sum
    src = r"""
    extern "C" __global__ void block_sums(const float* x, float* sums, int per_block) {
        extern __shared__ float stage[];
        const float* mine = x + (long long)blockIdx.x * per_block;
        for (int i = threadIdx.x; i < per_block; i += blockDim.x) stage[i] = mine[i];
        __syncthreads();
        if (threadIdx.x == 0) {
            double s = 0;
            for (int i = 0; i < per_block; ++i) s += stage[i];
            sums[blockIdx.x] = (float)s;
        }
    }"""
    sums_k = unsafe.raw_kernel(src, "block_sums", [unsafe.read("x", f32),
                                                   unsafe.write("sums", f32),
                                                   unsafe.scalar("per_block", "int")])
    per, blocks = 16384, 6
    xs = randn(per * blocks, 16)
    _, sums, _ = sums_k(api.from_numpy(xs), api.zeros([blocks], f32), per, grid=blocks,
                        block=256, shared_mem=per * 4).sync()
    want = xs.astype(np.float64).reshape(blocks, per).sum(axis=1)
    np.testing.assert_allclose(sums.to_numpy(), want, rtol=1e-5, atol=1e-3)


# -- the host rules while a raw op holds its tensors ------------------------------------


def test_tensors_are_moved_into_a_raw_op_until_it_ran() -> None:
    n = 512
    xs, ys = randn(n, 17), randn(n, 18)
    x, y = api.from_numpy(xs), api.from_numpy(ys)
    op = axpy(2.0, x, y, n, grid=2)
    for t in (x, y):
        with pytest.raises(cutile.BorrowError) as err:
            t.to_numpy()
        assert err.value.code == "CT5001" and "`axpy` (op #" in err.value.message
    op.sync()
    close(y.to_numpy(), 2.0 * xs.astype(np.float64) + ys)
    with pytest.raises(cutile.BorrowError) as again:
        op.sync()
    assert again.value.code == "CT5020"


def test_overlapping_views_in_two_pending_ops_are_ordered_by_the_ledger() -> None:
    n = 1024
    bs, xs = randn(n, 19), randn(512, 20)
    base = api.from_numpy(bs)
    first = axpy(1.0, api.from_numpy(xs), base[0:512], 512, grid=2)
    second = axpy(1.0, base[256:768], api.zeros([512], f32), 512, grid=2)  # reads first's bytes
    # the two ops take two of the pool's streams; the second waits on the first's event,
    # so it reads what the first wrote (before streams, this was refused: CT5008)
    (_, _, y1, _), (_, _, y2, _) = cutile.zip(first, second).sync()
    written = bs.astype(np.float64)
    written[:512] += xs
    close(y1.to_numpy(), written[:512])
    close(y2.to_numpy(), written[256:768])
    gc.collect()
    assert base.to_numpy().shape == (n,)  # everything was handed back


def test_a_raw_op_dropped_without_running_warns_and_its_tensors_stay_unusable() -> None:
    y = api.from_numpy(randn(256, 21))
    with pytest.warns(cutile.OpNeverRunWarning, match=r"`axpy` \(op #\d+\).*`x`, `y`"):
        axpy(1.0, api.zeros([256], f32), y, 256, grid=1)
        gc.collect()
    with pytest.raises(cutile.BorrowError) as err:
        y.to_numpy()
    assert err.value.code == "CT5009"


def test_an_empty_grid_runs_nothing_and_hands_back() -> None:
    ys = randn(64, 22)
    y = api.from_numpy(ys)
    axpy(5.0, api.zeros([64], f32), y, 64, grid=0).sync()
    np.testing.assert_array_equal(y.to_numpy(), ys)
