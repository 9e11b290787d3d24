"""A raw CUDA C++ kernel (compiled by NVRTC) next to a tile kernel, in one chain of ops.

`clip_count` is C++: it clips x to [lo, hi] into y and counts the clipped elements with
`atomicAdd` into a one-element i32 tensor. cutile cannot check C++, so it lives under
`cutile.unsafe`, and its parameter declarations (x read, y written, the count updated
atomically) are our promise; the host holds the tensors as they say, exactly as it does a
tile kernel's. `affine` is a tile kernel that reads y: z = a * y + b. On the GPU the two run
as `clip_count(...).then(affine(...))`; on the CPU interpreter a raw kernel cannot run
(CT6120), so the example says so, still builds the cubin with NVRTC if it is installed,
and runs the tile kernel on numpy's clip. Every element and the count are checked.

    python examples/raw_kernel.py
"""

import numpy as np

import cutile
from cutile import api, unsafe
from cutile.core import Const, Mut, Tensor, f32, i32, load_tile_like

SOURCE = r"""
extern "C" __global__ void clip_count(const float* x, float* y, int* clipped,
                                      float lo, float hi, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float c = fminf(fmaxf(v, lo), hi);
    y[i] = c;
    if (c != v) atomicAdd(clipped, 1);
}
"""

clip_count = unsafe.raw_kernel(SOURCE, "clip_count", params=[
    unsafe.read("x", f32), unsafe.write("y", f32), unsafe.atomic("clipped", i32),
    unsafe.scalar("lo", "float"), unsafe.scalar("hi", "float"),
    unsafe.scalar("n", "long long"),
], block=256)


@cutile.entry
def affine(z: Mut[Tensor[f32, ["B"]]], y: Tensor[f32, [-1]], a: f32, b: f32, B: Const[int]):
    z.store(a * load_tile_like(y, z) + b)


def main(n: int = 1_000_003, tile: int = 1024) -> None:
    rng = np.random.default_rng(9)
    xs = rng.standard_normal(n, dtype=np.float32) * 2
    lo, hi, a, b = -1.5, 2.0, 0.75, -0.25
    x = api.from_numpy(xs)
    y = api.zeros([n], f32)
    clipped = api.zeros([1], i32)
    z = api.full([n], np.nan, f32).partition([tile])   # poisoned: every element is written
    try:
        z, y, _, _ = clip_count(x, y, clipped, lo, hi, n, grid=-(-n // 256)).then(
            lambda x, y, clipped_, lo_, hi_, n_: affine(z, y, a, b)).sync()
        count = int(clipped.to_numpy()[0])
        where = "GPU"
    except cutile.LaunchError as err:
        if err.code != "CT6120":
            raise
        print(f"raw_kernel: raw CUDA C++ kernels need a GPU ([{err.code}]); running the tile "
              "kernel on numpy's clip")
        try:
            built = clip_count.compile("sm_90")
            print(f"raw_kernel: NVRTC still built the sm_90 cubin ({len(built.cubin)} bytes)")
        except cutile.CompileError as missing:  # no NVRTC installed: CT7010
            print(f"raw_kernel: no cubin either: {missing.message}")
        y = api.from_numpy(np.clip(xs, lo, hi))
        z, y, _, _ = affine(z, y, a, b).sync()
        count = int(np.count_nonzero((xs < lo) | (xs > hi)))
        where = "interpreter"
    clip = np.clip(xs.astype(np.float64), lo, hi)
    np.testing.assert_array_equal(y.to_numpy(), clip.astype(np.float32))
    assert count == np.count_nonzero((xs < lo) | (xs > hi)), count
    out = z.unpartition().to_numpy().astype(np.float64)
    expected = a * clip + b
    # one f32 multiply-add: within an ulp or two of the float64 result
    bad = np.flatnonzero(np.abs(out - expected) > 4 * np.finfo(np.float32).eps
                         * (np.abs(expected) + 1))
    assert bad.size == 0, f"{bad.size} wrong elements, first at {bad[0]}: {out[bad[0]]}"
    print(f"raw_kernel: {n} elements on the {where}, {count} clipped: all correct")


if __name__ == "__main__":
    main()
