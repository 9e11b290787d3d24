"""Tile sizes and split counts of every kernel of the engine, for one model config.

The decode GEMVs decide the speed: a (BO, BK) weight tile per load, KPS column tiles per
block (tileiras unrolls them into KPS loads in flight), S = column tiles / KPS splits of
the reduction, and tileiras' `occupancy` hint (CTAs per SM). `benchmarks/llm_decode.py
--sweep` times candidates on the GPU; the best ones go in `TUNED` (keyed by (N, K)).
Without an entry, `gemv_tiles` aims at about four blocks per SM with KPS near 4.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .config import Qwen3Config

SMS = 132                                  # H200


def pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class GemvTiles:
    BO: int                      # output rows per block
    BK: int                      # columns per weight tile
    KPS: int                     # column tiles per block (divides the column tile count)
    occupancy: int | None = None
    loop: bool = False           # KPS at run time: a pipelined loop, not KPS unrolled loads

    def splits(self, k: int) -> int:
        tiles = cdiv(k, self.BK)
        if tiles % self.KPS:
            raise ValueError(f"KPS={self.KPS} does not divide the {tiles} column tiles of "
                             f"K={k} (BK={self.BK})")
        return tiles // self.KPS

    def blocks(self, n: int, k: int) -> int:
        return cdiv(n, self.BO) * self.splits(k)


# (N, K) -> tiles measured best on the H200 (benchmarks/llm_decode.py --sweep).
TUNED: dict[tuple[int, int], GemvTiles] = {}


def gemv_tiles(n: int, k: int, sms: int = SMS) -> GemvTiles:
    """The tuned tiles of an (N, K) GEMV, else: the most column tiles per block (up to 8,
    dividing the count) that still give at least two blocks per SM."""
    if (n, k) in TUNED:
        return TUNED[(n, k)]
    bk = 128 if k >= 1024 else 32
    bo = 64 if n >= 1024 else 32
    tiles = cdiv(k, bk)
    fits = [d for d in range(1, min(8, tiles) + 1)
            if tiles % d == 0 and cdiv(n, bo) * (tiles // d) >= 2 * sms]
    return GemvTiles(bo, bk, max(fits, default=1), 2 if n >= 1024 else None)


@dataclass(frozen=True)
class Plan:
    qkv: GemvTiles
    o: GemvTiles
    gate_up: GemvTiles
    down: GemvTiles
    lm_bo: int                   # LM head rows per block (whole rows: no split)
    lm_bk: int
    lm_occupancy: int | None
    attn_bs: int                 # keys per tile in decode attention
    attn_splits: int             # NS: shares of the sequence per key/value head
    embed_tile: int
    swiglu_tile: int             # divides the intermediate size
    prefill_bm: int              # prefill GEMMs adding into the residual stream
    prefill_bn: int
    prefill_bk: int
    prefill_head_bm: int         # rows per tile of the QKV GEMM and of causal attention
    swiglu_bn: int               # columns per tile of the gate/up GEMM (two accumulators)
    cache_rows: int              # rows per block when the prefill fills the cache
    sample_chunk: int            # logits per top-k block when sampling
    sample_k: int                # candidates kept (top-k sampling takes k <= this)

    def with_(self, **changes: object) -> Plan:
        return replace(self, **changes)  # type: ignore[arg-type]


def largest_pow2_divisor(n: int, cap: int) -> int:
    t = 1
    while t * 2 <= cap and n % (t * 2) == 0:
        t *= 2
    return t


def plan_for(cfg: Qwen3Config, sms: int = SMS) -> Plan:
    h, i = cfg.hidden_size, cfg.intermediate_size
    small = h < 1024
    splits = max(1, pow2_at_least(cdiv(sms, cfg.num_kv_heads)))   # fill the SMs
    return Plan(
        qkv=gemv_tiles(cfg.qkv_size, h, sms),
        o=gemv_tiles(h, cfg.q_size, sms),
        gate_up=gemv_tiles(2 * i, h, sms),
        down=gemv_tiles(h, i, sms),
        lm_bo=32 if small else 128,
        lm_bk=32 if small else 128,
        lm_occupancy=None if small else 2,
        attn_bs=16 if small else 64,
        attn_splits=4 if small else splits,
        embed_tile=min(1024, pow2_at_least(h)),
        swiglu_tile=largest_pow2_divisor(i, 256),
        prefill_bm=16 if small else 128,
        prefill_bn=32 if small else 128,
        prefill_bk=32 if small else 64,
        prefill_head_bm=16 if small else 64,
        swiglu_bn=32 if small else 64,
        cache_rows=16 if small else 128,
        sample_chunk=128 if small else 4096,
        sample_k=16 if small else 64,
    )
