"""Tile sizes and split counts of every kernel of the engine, for one model config.

The decode GEMVs decide the speed: a (BO, BK) weight tile per load, KPS column tiles per
block (tileiras unrolls them into KPS loads in flight), S = column tiles / KPS splits of
the reduction, tileiras' `occupancy` hint (CTAs per SM) and the loads' `latency` hint.
`benchmarks/llm_decode.py` times candidates on the GPU; the best ones go in `TUNED`, keyed
by (kind, N, K): "partial" (QKV, or gate/up when not fused), "add" (o_proj, down), "swiglu"
(gate/up fused with SwiGLU, whole rows per block). Without an entry, `gemv_tiles` picks
tiles from the arithmetic of one wave (see there).

A GEMV of the decode step is short (QKV of Qwen3-4B: 31 MB, 7.5 us at the copy
bandwidth), and each launch pays a fixed ~4 us on the H200 (the 2026-11-30 run fits
bytes / 4.2-4.3 TB/s + 3.9-4.3 us for the one-wave GEMVs: launch, the first bytes'
latency, the tail; examples/llm/README.md), so the plan favours grids that put every block
on an SM at once with loads in flight from the start (one wave, blocks of equal work) and
fewer kernels per layer (`mlp_fused`, `attn_fused`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .config import Qwen3Config
from .kernels.attention import DECODE_OCCUPANCY
from .prefill_plan import PrefillPlan, prefill_plan

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
    latency: int | None = None   # the weight loads' latency hint (deeper loop pipelines)

    def splits(self, k: int) -> int:
        tiles = cdiv(k, self.BK)
        if tiles % self.KPS:
            raise ValueError(f"KPS={self.KPS} does not divide the {tiles} column tiles of "
                             f"K={k} (BK={self.BK})")
        return tiles // self.KPS

    def blocks(self, n: int, k: int) -> int:
        return cdiv(n, self.BO) * self.splits(k)


# (kind, N, K) -> tiles measured best on the H200 (benchmarks/llm_decode.py --parts gemv,
# results/2026-11-30-llm-gemv.json: Qwen3-4B).
TUNED: dict[tuple[str, int, int], GemvTiles] = {
    # QKV: 64x64 kps 8 looped at occupancy 4 (384 blocks on 528 slots) in the step, with two
    # weight steps ahead of the PDL wait (results/2026-12-01-llm-decode-qkv-early.json):
    # 376.3 -> 387.1 tok/s at 1k through cutile.graph (raw graph 390.1 -> 398.3); was
    # 128x64 kps 8 occupancy 2 (2.70 TB/s alone). Unrolled (not looped) it spills
    ("partial", 6144, 2560): GemvTiles(64, 64, 8, 4, loop=True),
    # o_proj: 16-row blocks at occupancy 5 (160 x 4 = 640 blocks on 660 slots) in the step
    # (results/2026-12-01-llm-decode-4b-tiles.json): 356.3 / 357.7 -> 361.3 tok/s; was
    # 64x64 kps8 occupancy 4 (2.37 TB/s alone)
    ("add", 2560, 4096): GemvTiles(16, 128, 8, 5),
    ("partial", 19456, 2560): GemvTiles(64, 64, 8, 4),                # gate/up 3.49
    # gate/up + SwiGLU in the decode step (`--plans gate_up=...`, results/2026-12-01-llm-
    # decode-4b-tiles.json): the rule's 64x64 whole rows (152 blocks on 264 slots: 20 SMs
    # hold two) gave 337.7 tok/s through cutile.graph; 16-row blocks at occupancy 5 (608
    # blocks on 660 slots: every SM holds four or five) 345.7 (occupancy 4: 310.5)
    ("swiglu", 19456, 2560): GemvTiles(16, 128, 20, 5, loop=True),
    ("add", 2560, 9728): GemvTiles(32, 128, 19, 3, loop=True),        # down 3.14
    # Qwen3-8B (--gemvs qkv_8b,...; results/2026-12-01-llm-gemv-8b.json), TB/s on a stream
    # and in a CUDA graph; the rule below gave 2.71 (QKV: 384 blocks on 264 slots), 2.93,
    # 3.51 and 3.51 (down: 768 blocks)
    # QKV: 64x128 kps 8 at occupancy 3 measured 3.12 / 3.40 alone, but spills in the variant
    # that also sums squares (`gemv_ss`, what the engine runs); 128x128 kps 8 (2.99 / 3.24)
    # spills as a PDL twin. 64x128 kps 16 at occupancy 2 (192 blocks) in the step, two
    # steps early (results/2026-12-01-llm-decode-qkv-early.json): 229.7 -> 241.3 tok/s
    ("partial", 6144, 4096): GemvTiles(64, 128, 16, 2),
    ("add", 4096, 4096): GemvTiles(128, 64, 8, 2),                    # o_proj 2.94 / 3.24
    ("swiglu", 24576, 4096): GemvTiles(32, 128, 32, 3, loop=True),    # gate/up 3.86 / 3.96
    ("add", 4096, 12288): GemvTiles(64, 128, 24, 2, loop=True, latency=10),  # down 3.69 / 3.89
    # Qwen3-0.6B, in the decode step (`--plans role=tiles`; results/2026-12-01-s8-llm-decode-
    # 06b-tiles*.json), raw graph tok/s at 1k against the rule's tiles (1047-1052). Its
    # GEMVs are 4-13 MB, so a block's chain of dependent steps, not the bytes, sets the
    # time: gate/up + SwiGLU in 8-row blocks of four 256-column steps (384 blocks; the
    # rule's 16 x 64 x 16 looped, 192 blocks, ran at 0.8 TB/s), QKV and down in two-split
    # blocks. Together 1413.8 / 1420.4 (+35%); QKV alone +4.5%, down +4.4%, gate/up +19%;
    # no o_proj candidate moved it (1054-1057).
    ("swiglu", 6144, 1024): GemvTiles(8, 256, 4, 4),
    ("partial", 4096, 1024): GemvTiles(32, 128, 4, 3),
    ("add", 1024, 3072): GemvTiles(32, 128, 2, 4),
}


def gemv_tiles(kind: str, n: int, k: int, sms: int = SMS) -> GemvTiles:
    """The tuned tiles of a GEMV, else: for a split GEMV, the most column tiles per block
    (up to 8, dividing the count) that still give at least two blocks per SM; for the fused
    gate/up ("swiglu", n = 2 I), `swiglu_tiles`."""
    if (kind, n, k) in TUNED:
        return TUNED[(kind, n, k)]
    if kind == "swiglu":
        return swiglu_tiles(n // 2, k, sms)
    bk = 128 if k >= 1024 else 32
    bo = 64 if n >= 1024 else 32
    tiles = cdiv(k, bk)
    fits = [d for d in range(1, min(8, tiles) + 1)
            if tiles % d == 0 and cdiv(n, bo) * (tiles // d) >= 2 * sms]
    return GemvTiles(bo, bk, max(fits, default=1), 2 if n >= 1024 else None)


def swiglu_tiles(i: int, k: int, sms: int = SMS) -> GemvTiles:
    """Tiles of the fused gate/up + SwiGLU GEMV (whole rows: KPS is every column tile, one
    split): BO gate rows and BO up rows per block, BO a power of two dividing I. The
    largest BO (up to 64) that still gives a block to every SM: I / BO blocks of equal work
    run as one wave at two CTAs per SM, and (BO, 64) tiles with the latency hint 10 keep
    about six stages (~96 KB) of loads in flight per CTA (tileiras' choice, read from the
    assembled kernel's shared memory)."""
    divisors = [b for b in (64, 32, 16) if i % b == 0]
    if not divisors:
        raise ValueError(f"intermediate size {i} is not a multiple of 16")
    bo = next((b for b in divisors if i // b >= sms), divisors[-1])
    bk = 64 if k >= 1024 else 32
    return GemvTiles(bo, bk, cdiv(k, bk), 2 if k >= 1024 else None, loop=True,
                     latency=10 if k >= 1024 else None)


@dataclass(frozen=True)
class Plan:
    qkv: GemvTiles
    o: GemvTiles
    gate_up: GemvTiles
    down: GemvTiles
    mlp_fused: bool              # gate/up and SwiGLU in one kernel (`gate_up` is "swiglu")
    attn_fused: bool             # attention's combine inside the output projection (`o`
                                 # then has KPS = G D / BK: one split per kv head)
    lm_bo: int                   # LM head rows per block (whole rows: no split)
    lm_bk: int
    lm_occupancy: int | None
    attn_bs: int                 # keys per tile in decode attention
    attn_splits: int             # NS: shares of the sequence per key/value head
    combine_chunk: int           # DC: output columns per `attn_combine` block
    embed_tile: int
    swiglu_tile: int             # divides the intermediate size
    prefill: PrefillPlan         # the prompt's GEMMs and attention (`prefill_plan.py`)
    sample_chunk: int            # logits per top-k block when sampling
    sample_k: int                # candidates kept (top-k sampling takes k <= this)
    pdl: bool = False            # every kernel with programmatic dependent launch: its
                                 # blocks start while the previous kernel finishes
                                 # (`llm.kernels.pdl`, docs/pdl.md)
    pdl_kernels: tuple[str, ...] = ()  # with `pdl`: only these kernels (by name); () = all
    trigger_first: tuple[str, ...] = ()  # with `pdl`: kernels (by name) that let the next
                                         # one be scheduled before their own wait
                                         # (`pdl_trigger_first`: its early loads then
                                         # overlap this kernel's predecessor too)
    pdl_early: bool = True       # with `pdl`: each GEMV's first weight tile loaded ahead of
                                 # the wait (`llm.kernels.pdl.EARLY_WEIGHTS`)
    early_steps: int = 2         # the weight steps (1-4) each decode GEMV loads before
                                 # anything else, all ahead of the wait with `pdl_early`
                                 # (`llm.kernels.gemv.weight_steps`; 1: the first tile).
                                 # 2 measured best on the H200 (4B: 1 -> 2 gave 377.8 ->
                                 # 387.1 tok/s; 4 in the split GEMVs and 2 in the whole-
                                 # row ones, 379.2; 4 everywhere, 302)
    early_rows: int | None = None    # the same for the whole-row GEMVs (gate/up + SwiGLU,
                                     # the LM head); None: `early_steps`. On sm_90 their
                                     # tiles spill (or drop to one CTA per SM) beyond 2-3
                                     # (`benchmarks/llm_early_sass.py`)
    early_o: int | None = None   # the same for the output projection alone (None:
                                 # `early_steps`): its predecessor, attention's combine,
                                 # leaves HBM idle, where the other GEMVs follow GEMVs.
                                 # Qwen3-4B at 1k, raw graph: 3 or 4 steps 399.6 / 400.1
                                 # tok/s against 401.0-401.2 (results/2026-12-01-s8-llm-
                                 # decode-4b-early-o.json): the combine is too short to hide
                                 # more than two steps

    def early(self, whole_rows: bool) -> int:
        """The weight steps a decode GEMV loads ahead of its PDL wait."""
        if whole_rows and self.early_rows is not None:
            return self.early_rows
        return self.early_steps

    def early_of(self, role: str) -> int:
        """`early` for one of the step's GEMVs by role (qkv, o, gate_up, down, lm)."""
        if role == "o" and self.early_o is not None:
            return self.early_o
        return self.early(role == "lm" or (role == "gate_up" and self.mlp_fused))
    # The decode step's small kernels between the QKV GEMV and the output projection
    # (see ATTN_PATHS): "split" qkv_finish + attn_decode + attn_combine (8-block finish,
    # TMA everywhere); "heads" qkv_heads + attn_decode_q + attn_combine_heads (a block per
    # query head, loads issued first); "fused" attn_decode_qkv + attn_combine_cache (the
    # finish inside attention, the cache row written by the combine: one kernel less).
    # The default, "heads" with direct small loads on one warp, was the fastest on the
    # H200 (Qwen3-4B at 1k: 344.6 tok/s through cutile.graph against 328.0 for "split").
    attn_path: str = "heads"
    small_tma: bool = False      # "heads"/"fused": small loads and stores through TMA
    kv_tma: bool = True          # "heads"/"fused": key and value tiles through TMA
    small_warps: int | None = 1      # "heads"/"fused": tileiras' worker warps for the
                                     # kernels without MMA (1: no barrier, shuffles only)
    combine_o_tma: bool = True   # "heads"/"fused": the combine's share outputs through TMA
    attn_exact: bool = True      # "heads"/"fused": q and the probabilities as bf16 hi + lo
                                 # halves in the MMAs (f32 accuracy); False: bf16, as
                                 # torch's SDPA (half the MMAs of the per-tile chain).
                                 # `plan_for`: False for every real config
    attn_counted: bool = False   # "heads"/"fused": decode attention's loop over the share's
                                 # tiles below the length (a device count, no branch;
                                 # tileiras pipelines it, yet Qwen3-4B at 8k: 341.5 against
                                 # 347.7 tok/s)
    attn_occupancy: int | None = None  # "heads"/"fused": decode attention's CTAs per SM
                                       # (None: its own, DECODE_OCCUPANCY); with bf16
                                       # inputs 4 fits in 64 registers without a spill,
                                       # but 4B at 8k stays within 2% (RESULTS.md)
    fp_contract: bool = False    # every kernel with `fp_contract` (a float product that
                                 # only an add uses becomes one fma; docs/dsl.md)
    attn_warps: int | None = None  # "heads"/"fused": decode attention's worker warps
                                   # (None: tileiras' choice, 4); 1 keeps the row maximum
                                   # and sum in one warp (one barrier a tile instead of
                                   # 15; 32-key tiles then fit without a spill).
                                   # `plan_for`: 1 with 32-key tiles on every real config
    exact_chunk: int = 1024      # logits per block of whole-vocabulary sampling
                                 # (`kernels.sample_exact`: 149 blocks for Qwen3)

    def with_(self, **changes: object) -> Plan:
        return replace(self, **changes)  # type: ignore[arg-type]


# The decode step's attention paths (`Plan.attn_path`) and the kernels each launches per
# layer between the QKV GEMV and the output projection.
ATTN_PATHS = {"split": ("qkv_finish", "attn_decode", "attn_combine"),
              "heads": ("qkv_heads", "attn_decode_q", "attn_combine_heads"),
              "fused": ("attn_decode_qkv", "attn_combine_cache"),
              "ahead": ("qkv_heads_new", "attn_decode_ahead", "attn_combine_cache")}


# Named variants of the decode step's small kernels: Plan fields changed on top of
# `plan_for`'s plan (`benchmarks/llm_decode.py --plans`, `--parts smallkernels`). "heads" /
# "fused": the paths above with direct (non-TMA) small loads, the combine's share outputs
# through TMA, and one worker warp for the kernels without MMA (reductions in shuffles, no
# barrier); "_oldg": the share outputs direct too; "_w4": tileiras' warps (4) and all
# small loads direct; "_tma": every load through TMA, tileiras' warps (a control: its fused
# attention spills 24 registers on sm_90); "_ldg": the key and value tiles direct too;
# "_bs32" / "_ns16" / "_ns8": 32-key tiles / 16 or 8 shares per kv head; "_bs64w4": 64-key
# tiles on tileiras' four warps (the default before one-warp attention). "ahead": the cache
# tiles loaded ahead of the PDL wait (`attn_paths.ahead`); correct on the H200 but slower
# (Qwen3-4B raw graph: 393.5 against 397.8 tok/s at 1k, 354.1 against 359.1 at 8k;
# results/2026-12-01-s6-llm-decode-4b-ahead.json): its attention kernel alone takes 18% /
# 11% longer than `attn_decode_q`, more than the early loads hide.
# each variant names every field it depends on (the defaults are "heads" with _FAST)
_FAST: dict[str, object] = {"small_tma": False, "small_warps": 1, "combine_o_tma": True}
_TMA: dict[str, object] = {"small_tma": True, "small_warps": None, "combine_o_tma": True,
                           "attn_warps": None}
_W4: dict[str, object] = {"small_tma": False, "small_warps": None, "combine_o_tma": False,
                          "attn_warps": None}
SMALL_VARIANTS: dict[str, dict[str, object]] = {
    "split_attn": {"attn_path": "split"},
    "heads": {"attn_path": "heads", **_FAST},
    "heads_w4": {"attn_path": "heads", **_W4},
    "heads_tma": {"attn_path": "heads", **_TMA},
    "heads_ns16": {"attn_path": "heads", **_FAST, "attn_splits": 16},
    "heads_ns8": {"attn_path": "heads", **_FAST, "attn_splits": 8},
    "heads_bs32": {"attn_path": "heads", **_FAST, "attn_bs": 32},
    "heads_w1": {"attn_path": "heads", **_FAST, "attn_warps": 1, "attn_bs": 32},
    "heads_bs64w4": {"attn_path": "heads", **_FAST, "attn_warps": None, "attn_bs": 64},
    "ahead": {"attn_path": "ahead", **_FAST},
    "fused": {"attn_path": "fused", **_FAST},
    "fused_oldg": {"attn_path": "fused", **_FAST, "combine_o_tma": False},
    "fused_w4": {"attn_path": "fused", **_W4},
    "fused_tma": {"attn_path": "fused", **_TMA},
    "fused_ldg": {"attn_path": "fused", **_FAST, "kv_tma": False},
    "fused_bs32": {"attn_path": "fused", **_FAST, "attn_bs": 32},
    "fused_ns16": {"attn_path": "fused", **_FAST, "attn_splits": 16},
}


def largest_pow2_divisor(n: int, cap: int) -> int:
    t = 1
    while t * 2 <= cap and n % (t * 2) == 0:
        t *= 2
    return t


def combine_chunk(cfg: Qwen3Config, sms: int = SMS) -> int:
    """Columns per `attn_combine` block: a power of two dividing head_dim (at least 16, a
    TMA-sized row), the smallest that gives no more blocks than SMs, so the grid is one
    wave at one CTA per SM (Qwen3-4B: 4096 / 32 = 128 blocks)."""
    return min(cfg.head_dim, max(16, pow2_at_least(cdiv(cfg.q_size, sms))))


def pdl_by_default(cfg: Qwen3Config) -> bool:
    """Whether the decode step takes programmatic dependent launch on every kernel by
    default: every real config (hidden >= 1024). Through cutile.graph on the H200
    (results/2026-12-01-llm-decode-pdl-4b-8b.json): Qwen3-0.6B 836 -> 899 tok/s, Qwen3-4B
    344.6 -> 365.3 at context 1k and 315.3 -> 323.8 at 8k, Qwen3-8B 226.4 -> 228.1. (With
    the earlier 4B gate/up tiles, 152 blocks on 132 SMs, PDL cost 4B 6%.) The
    interpreter's small test configs keep the plain kernels."""
    return cfg.hidden_size >= 1024


def plan_for(cfg: Qwen3Config, sms: int = SMS, mlp_fused: bool = True,
             attn_fused: bool = False, pdl: bool | None = None,
             pdl_kernels: tuple[str, ...] = (), prefill: str = "hybrid_norm") -> Plan:
    """The plan of a config. `attn_fused` (when the output projection's column tiles fit
    in a head: BK divides head_dim) folds attention's combine into the output projection:
    measured against the two kernels by `benchmarks/llm_decode.py --parts gemv`. `prefill`
    names the prefill's variant (`prefill_plan.variants`; "hybrid_norm" was the fastest on
    the H200: 27.1 ms of device time for 2047 tokens of Qwen3-4B against 31.3 for "wide",
    28.2 for "splitk_norm" and 34.3 for "old"). `pdl` None: `pdl_by_default(cfg)`."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    small = h < 1024
    if pdl is None:
        pdl = pdl_by_default(cfg)
    # Decode attention's shares: the most (a power of two) that keep the (KV heads, NS)
    # grid within one wave at `attn_decode`'s two CTAs per SM (128 registers, no spill).
    # The first build took 255 registers (one CTA per SM), so its 8 x 32 blocks on the
    # H200's 132 SMs ran as two waves; now 8 x 32 fit in one (at context 1k a block reads
    # at most one 64-key tile).
    splits = 1 << max(0, (DECODE_OCCUPANCY * sms // cfg.num_kv_heads).bit_length() - 1)
    o = gemv_tiles("add", h, cfg.q_size, sms)
    attn_fused = attn_fused and cfg.head_dim % o.BK == 0
    if attn_fused:
        o = replace(o, KPS=cfg.group * cfg.head_dim // o.BK, loop=False)
    return Plan(
        qkv=gemv_tiles("partial", cfg.qkv_size, h, sms),
        o=o,
        gate_up=gemv_tiles("swiglu" if mlp_fused else "partial", 2 * i, h, sms),
        down=gemv_tiles("add", h, i, sms),
        mlp_fused=mlp_fused,
        attn_fused=attn_fused,
        # Qwen3-0.6B's LM head (hidden 1024) in 64-row blocks at occupancy 3: 88.8 -> 82.4
        # us, raw graph 1415.5 / 1417.9 -> 1437.9 tok/s (results/2026-12-01-s8-llm-decode-
        # 06b-lm.json; 64 x 256, 256 x 64 and 64 x 64 were slower, 128 x 256 spills)
        lm_bo=32 if small else 64 if h <= 1024 else 128,
        lm_bk=32 if small else 128,
        lm_occupancy=None if small else 3 if h <= 1024 else 2,
        attn_bs=16 if small else 32,
        attn_splits=4 if small else splits,
        combine_chunk=combine_chunk(cfg, sms),
        embed_tile=min(1024, pow2_at_least(h)),
        swiglu_tile=largest_pow2_divisor(i, 256),
        prefill=prefill_plan(cfg, prefill, sms),
        sample_chunk=128 if small else 4096,
        exact_chunk=128 if small else 1024,
        sample_k=16 if small else 64,
        pdl=pdl,
        pdl_kernels=pdl_kernels,
        # bf16 attention inputs on every real config (Qwen3-4B on the H200, raw graph: 1k
        # 394.5 -> 396.9 tok/s, 8k 353.5 -> 359.1); the interpreter's small test configs
        # keep f32 accuracy, so their paths agree to the summation order
        attn_exact=small,
        # one worker warp with 32-key tiles on every real config (Qwen3-4B on the H200,
        # raw graph, results/2026-12-01-s6-llm-decode-w1.json: 8k 358.0 -> 360.2 tok/s, 1k
        # 395.3 -> 396.8; with 64-key tiles one warp spills)
        attn_warps=None if small else 1,
        # The small attention kernels let the next one be scheduled before their own PDL
        # wait, so the output projection becomes resident during attention and loads four
        # weight steps ahead of its wait. On the H100 (results/2026-12-08-s15-tf-*.json,
        # raw graph tok/s): Qwen3-4B 1k 319.5 -> 325.1, 8k 287.0 -> 292.6, 0.6B 1k 1305.7
        # -> 1325.2; not Qwen3-8B (184.6 -> 180.3-181.3: attention's blocks, resident early,
        # slow its larger QKV GEMV)
        trigger_first=ATTN_PATHS["heads"] if not small and h <= 2560 else (),
        early_o=4 if not small and h <= 2560 else None,
    )
