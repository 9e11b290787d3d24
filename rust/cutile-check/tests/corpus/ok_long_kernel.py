# expect: ok
# a 200-line kernel: the checker's time budget is 5 ms for this size (tests/perf.rs)
import cutile
from cutile.core import *


@cutile.device
def tile_of(x: Tensor[f32, [-1, -1]], i, j):
    return x.load_tile((64, 64), (i, j))


@cutile.device
def accumulate(o: Mut[Tensor[f32, [128, 128]]], acc, k):
    p = o.partition_mut((64, 64))
    for a in range(2):
        for b in range(2):
            p.store(acc * k, (a, b))


@cutile.entry
def long_kernel(z: Mut[Tensor[f32, [128, 128]]], w: Mut[Tensor[f32, [128, 128]]],
                x: Tensor[f32, [-1, -1]], y: Tensor[f32, [-1, -1]], n: i32, K: Const[int]):
    acc = zeros((64, 64), f32)
    bi = block_id(0)
    bj = block_id(1)
    for k0 in range(num_tiles(x, 1, (64, 64))):
        t0 = tile_of(x, 2 * bi, k0)
        acc = acc + t0 * 0.5
    u1 = load_tile_like(y, z)
    v1 = exp(u1) + maximum(u1, 0.0)
    if n > 2:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c3 = 0
    while c3 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c3 += 1
    accumulate(w, acc, 4.0)
    s5 = sum(acc, axis=0) + num_blocks(0) * 5
    for k6 in range(num_tiles(x, 1, (64, 64))):
        t6 = tile_of(x, 2 * bi, k6)
        acc = acc + t6 * 0.5
    u7 = load_tile_like(y, z)
    v7 = exp(u7) + maximum(u7, 0.0)
    if n > 8:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c9 = 0
    while c9 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c9 += 1
    accumulate(w, acc, 10.0)
    s11 = sum(acc, axis=0) + num_blocks(0) * 11
    for k12 in range(num_tiles(x, 1, (64, 64))):
        t12 = tile_of(x, 2 * bi, k12)
        acc = acc + t12 * 0.5
    u13 = load_tile_like(y, z)
    v13 = exp(u13) + maximum(u13, 0.0)
    if n > 14:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c15 = 0
    while c15 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c15 += 1
    accumulate(w, acc, 16.0)
    s17 = sum(acc, axis=0) + num_blocks(0) * 17
    for k18 in range(num_tiles(x, 1, (64, 64))):
        t18 = tile_of(x, 2 * bi, k18)
        acc = acc + t18 * 0.5
    u19 = load_tile_like(y, z)
    v19 = exp(u19) + maximum(u19, 0.0)
    if n > 20:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c21 = 0
    while c21 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c21 += 1
    accumulate(w, acc, 22.0)
    s23 = sum(acc, axis=0) + num_blocks(0) * 23
    for k24 in range(num_tiles(x, 1, (64, 64))):
        t24 = tile_of(x, 2 * bi, k24)
        acc = acc + t24 * 0.5
    u25 = load_tile_like(y, z)
    v25 = exp(u25) + maximum(u25, 0.0)
    if n > 26:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c27 = 0
    while c27 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c27 += 1
    accumulate(w, acc, 28.0)
    s29 = sum(acc, axis=0) + num_blocks(0) * 29
    for k30 in range(num_tiles(x, 1, (64, 64))):
        t30 = tile_of(x, 2 * bi, k30)
        acc = acc + t30 * 0.5
    u31 = load_tile_like(y, z)
    v31 = exp(u31) + maximum(u31, 0.0)
    if n > 32:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c33 = 0
    while c33 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c33 += 1
    accumulate(w, acc, 34.0)
    s35 = sum(acc, axis=0) + num_blocks(0) * 35
    for k36 in range(num_tiles(x, 1, (64, 64))):
        t36 = tile_of(x, 2 * bi, k36)
        acc = acc + t36 * 0.5
    u37 = load_tile_like(y, z)
    v37 = exp(u37) + maximum(u37, 0.0)
    if n > 38:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c39 = 0
    while c39 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c39 += 1
    accumulate(w, acc, 40.0)
    s41 = sum(acc, axis=0) + num_blocks(0) * 41
    for k42 in range(num_tiles(x, 1, (64, 64))):
        t42 = tile_of(x, 2 * bi, k42)
        acc = acc + t42 * 0.5
    u43 = load_tile_like(y, z)
    v43 = exp(u43) + maximum(u43, 0.0)
    if n > 44:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c45 = 0
    while c45 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c45 += 1
    accumulate(w, acc, 46.0)
    s47 = sum(acc, axis=0) + num_blocks(0) * 47
    for k48 in range(num_tiles(x, 1, (64, 64))):
        t48 = tile_of(x, 2 * bi, k48)
        acc = acc + t48 * 0.5
    u49 = load_tile_like(y, z)
    v49 = exp(u49) + maximum(u49, 0.0)
    if n > 50:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c51 = 0
    while c51 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c51 += 1
    accumulate(w, acc, 52.0)
    s53 = sum(acc, axis=0) + num_blocks(0) * 53
    for k54 in range(num_tiles(x, 1, (64, 64))):
        t54 = tile_of(x, 2 * bi, k54)
        acc = acc + t54 * 0.5
    u55 = load_tile_like(y, z)
    v55 = exp(u55) + maximum(u55, 0.0)
    if n > 56:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c57 = 0
    while c57 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c57 += 1
    accumulate(w, acc, 58.0)
    s59 = sum(acc, axis=0) + num_blocks(0) * 59
    for k60 in range(num_tiles(x, 1, (64, 64))):
        t60 = tile_of(x, 2 * bi, k60)
        acc = acc + t60 * 0.5
    u61 = load_tile_like(y, z)
    v61 = exp(u61) + maximum(u61, 0.0)
    if n > 62:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    c63 = 0
    while c63 < n:
        acc = acc + y.load_tile((64, 64), (bj, 0))
        c63 += 1
    accumulate(w, acc, 64.0)
    s65 = sum(acc, axis=0) + num_blocks(0) * 65
    for k66 in range(num_tiles(x, 1, (64, 64))):
        t66 = tile_of(x, 2 * bi, k66)
        acc = acc + t66 * 0.5
    u67 = load_tile_like(y, z)
    v67 = exp(u67) + maximum(u67, 0.0)
    if n > 68:
        acc = acc - 1.0
    else:
        acc = acc + 1.0
    z.store(load_tile_like(y, z) + 1.0)
    w2 = w
    w2.store(w2.load() * 2.0)
