"""Tiles, schedules and compiler hints of the prefill (the prompt through every layer at
once: GEMMs on the tensor cores and causal flash attention), as named variants that one
GPU run can compare (`benchmarks/llm_decode.py --parts prefill --prefill-plans old,new`).

At Qwen3-4B and 2048 tokens the prefill is GEMMs (~15 TFLOP: QKV 2048x6144x2560, o_proj
2048x2560x4096, gate/up 2048x19456x2560, down 2048x2560x9728 per layer) and causal
attention (~1.2 TFLOP). The tuned standalone GEMMs reach cuBLAS with 128-row tiles shared
by two consumer warpgroups (`num_worker_warps=8`: one warpgroup spills a 128x256
accumulator, two do not) and a persistent grouped schedule (benchmarks/RESULTS.md). What
tileiras made of each candidate at those shapes (sm_90, read from the SASS; registers per
thread, local-memory spills) is in the comments of `VARIANTS`; tests/llm/test_prefill.py
checks the chosen ones keep HGMMA and do not spill.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import cutile

from .config import Qwen3Config
from .kernels import prefill
from .kernels.attention import attn_prefill
from .kernels.prefill_gemm import prefill_gemms
from .kernels.prefill_splitk import atomic_residual


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class GemmTiles:
    """One GEMM's tile (BM, BN, BK), schedule and hints. `persistent`: `sms * occupancy /
    ctas` blocks walk the tiles (at most one per tile); else one block per tile."""

    BM: int
    BN: int
    BK: int
    persistent: bool = False
    occupancy: int | None = None
    warps: int | None = None             # tileiras' num_worker_warps (8: two consumer WGs)
    ctas: int | None = None              # num_ctas: a block runs as a cluster of CTAs
    latency: int | None = None           # the x and W loads' latency hint
    # residual GEMMs only: hs += x W^T with atomics into hs (kernels/prefill_splitk.py):
    # "splitk" (every tile split in `splits` K ranges), "hybrid" (the column tiles that
    # fill whole waves unsplit, the rest split), "streamk" (persistent data-parallel +
    # stream-K); None: the stored, ping-ponged residual of `prefill_gemms`
    atomic: str | None = None
    splits: int = 0                      # K splits of "splitk"/"hybrid"; 0: `best_splits`

    def hints(self) -> dict[str, int]:
        given = {"occupancy": self.occupancy, "num_worker_warps": self.warps,
                 "num_ctas": self.ctas}
        return {k: v for k, v in given.items() if v is not None}

    def blocks(self, rows: int, cols: int, sms: int) -> int | None:
        """Blocks of a persistent launch over a [rows, cols] output (None: tiled)."""
        if not self.persistent:
            return None
        tiles = cdiv(rows, self.BM) * cdiv(cols, self.BN)
        return max(1, min(tiles, sms * (self.occupancy or 1) // (self.ctas or 1)))

    def slots(self, sms: int) -> int:
        """Blocks that run at once: `occupancy` per multiprocessor."""
        return max(1, sms * (self.occupancy or 1) // (self.ctas or 1))

    def launches(self, rows: int, cols: int, k: int, sms: int) -> list[AtomicLaunch]:
        """The atomic residual GEMM's launches over a [rows, cols] output and a K-long
        reduction: (grid, first column tile J0, k-steps per split KPS) each."""
        tm, tn, kt = cdiv(rows, self.BM), cdiv(cols, self.BN), cdiv(k, self.BK)
        slots = self.slots(sms)
        if self.atomic == "streamk":
            return [AtomicLaunch((min(slots, tm * tn * kt),), 0, kt)]
        whole = 0                        # column tiles of whole (unsplit) tiles
        if self.atomic == "hybrid":
            whole = min(tn, (tm * tn) // slots * slots // tm)
        out = []
        if whole:
            out.append(AtomicLaunch((tm, whole, 1), 0, kt))
        if whole < tn:
            s = self.splits or best_splits(tm * (tn - whole), kt, slots)
            kps = cdiv(kt, s)
            out.append(AtomicLaunch((tm, tn - whole, cdiv(kt, kps)), whole, kps))
        return out

    def describe(self) -> str:
        if self.atomic:
            n = f"{self.splits}" if self.splits else "auto"
            kind = f"{self.atomic}({n}) " if self.atomic != "streamk" else "streamk "
            return kind + self._tiles()
        return ("persistent " if self.persistent else "") + self._tiles()

    def _tiles(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.hints().items())
        lat = f" lat{self.latency}" if self.latency else ""
        return f"{self.BM}x{self.BN}x{self.BK}{extra}{lat}"


@dataclass(frozen=True)
class AtomicLaunch:
    grid: tuple[int, ...]
    J0: int                      # first column tile (split-K launches)
    KPS: int                     # k-steps per split


# What ending a work unit costs, in k-steps of its own loop: the atomic epilogue (the
# (BM, BN) f32 tile through shared memory, then 16-byte reductions into L2) and the next
# unit's pipeline fill. An estimate (a 256x128x64 k-step is ~0.6 us of one H200 SM, the
# epilogue and fill a few us); `best_splits` only needs it to prefer fewer, longer units
# when two split counts fill the waves alike.
UNIT_OVERHEAD = 6
MAX_SPLITS = 16


def best_splits(tiles: int, kt: int, slots: int) -> int:
    """The split count S of `tiles` output tiles of `kt` k-steps on `slots` blocks at once
    that minimizes the modelled time, waves x (k-steps per unit + UNIT_OVERHEAD): tiles x S
    units run in ceil(tiles S / slots) waves of ceil(kt / S) k-steps each. The smallest S
    wins ties (fewer atomics). At Qwen3-4B, 2048 tokens, 256x128 tiles on 132 SMs: S = 4
    for o_proj (KT 64: 5 waves of 16 k-steps against 2 of 64) and down (KT 152)."""
    def cost(s: int) -> int:
        return cdiv(tiles * s, slots) * (cdiv(kt, s) + UNIT_OVERHEAD)

    return min(range(1, max(1, min(MAX_SPLITS, kt)) + 1), key=lambda s: (cost(s), s))


@dataclass(frozen=True)
class PrefillPlan:
    qkv: GemmTiles               # BN = head_dim: one head per output tile (its epilogue)
    o: GemmTiles                 # hs += attn Wo^T
    gate_up: GemmTiles           # BN gate and BN up columns per tile (two accumulators)
    down: GemmTiles              # hs += act Wd^T
    attn_bm: int                 # query rows (= key rows) per tile of causal attention
    attn_occupancy: int | None
    attn_ctas: int | None
    row_tile: int                # rows per block of the embedding and the cache fill
    chained: bool                # ops chained on one stream, one wait at the end
    kv_only_last: bool           # the last layer computes its keys and values only
    sms: int                     # multiprocessors (persistent launches: blocks per SM)
    # the norms' rows per block and column tile (`norm_prep_looped`); norm_bk 0: whole
    # rows in one tile (`norm_prep`; norm_rows 0: as many as fit a 4096-element tile);
    # norm_occupancy: tileiras' hint (None: its choice, 255 registers and one CTA per SM)
    norm_rows: int = 0
    norm_bk: int = 0
    norm_occupancy: int | None = None

    def with_(self, **changes: Any) -> PrefillPlan:
        return replace(self, **changes)


def variants(cfg: Qwen3Config, sms: int) -> dict[str, PrefillPlan]:
    """The named prefill variants of a config. A small config (hidden < 1024, the CPU
    interpreter's tests) takes small tiles in every variant but the same schedules."""
    d = cfg.head_dim
    if cfg.hidden_size < 1024:
        def tiles(bm: int, bn: int, bk: int, head: bool = False, **kw: Any) -> GemmTiles:
            # the QKV GEMM's tiles stay one head wide (`head`: BN = head_dim, its
            # epilogue's q/k norm is per head): min(d, 32) cut a head of 64 in two, and
            # every token after the prefill was wrong
            return GemmTiles(16, bn if head else min(bn, 32), 32, **kw)
        attn_bm, row_tile = 16, 16
    else:
        def tiles(bm: int, bn: int, bk: int, head: bool = False, **kw: Any) -> GemmTiles:
            return GemmTiles(bm, bn, bk, **kw)
        attn_bm, row_tile = 128, 128
    old = PrefillPlan(
        # before this plan: 64-row QKV tiles (255 registers, no spill), 128x128 occupancy 2
        # for the residual GEMMs (128 registers), 128x(2x64) gate/up, 64x64 attention
        # without hints, every op waited for, every layer whole
        qkv=tiles(64, d, 64, head=True), o=tiles(128, 128, 64, occupancy=2),
        gate_up=tiles(128, 64, 64), down=tiles(128, 128, 64, occupancy=2),
        attn_bm=16 if cfg.hidden_size < 1024 else 64, attn_occupancy=None, attn_ctas=None,
        row_tile=row_tile, chained=False, kv_only_last=False, sms=sms)
    new = old.with_(
        # two consumer warpgroups: 128x128 QKV tiles (each warpgroup 64 rows) keep the
        # norm + RoPE epilogue in 168 registers without a spill (256-row tiles spill ~400
        # words: the epilogue's f32 tiles); gate/up 128x(2x128), 168 registers, no spill
        qkv=tiles(128, d, 64, head=True, warps=8),
        gate_up=tiles(128, 128, 64, warps=8),
        # N = 2560 is 20 column tiles of 128: 320 tiles of 128x128 (2.4 waves on 132 SMs),
        # 160 of 256x128 (1.2 waves); persistent 128x128 walks them with the epilogue of
        # one tile overlapping the next tile's loads (255 registers, no spill; with
        # occupancy 2 it spills)
        o=tiles(128, 128, 64, persistent=True), down=tiles(128, 128, 64, persistent=True),
        # examples/attention.py's fastest d = 128 causal configuration (RESULTS.md):
        # 128x128 tiles, 2-CTA clusters, two per SM (128 registers, no spill; occupancy 2
        # alone spills)
        attn_bm=attn_bm, attn_occupancy=2, attn_ctas=2,
        chained=True, kv_only_last=True)
    wide = new.with_(o=tiles(256, 128, 64, warps=8), down=tiles(256, 128, 64, warps=8))
    # (rows, columns) tiles of the looped norms (a small config's hidden size is a few
    # tiles of 32); (rows, 0): whole rows in one tile; with an occupancy hint, "o<n>"
    norm_tiles = ([(4, 32, None), (2, 0, 4)] if cfg.hidden_size < 1024 else
                  [(8, 512, None), (16, 256, None), (16, 256, 2), (8, 256, 2), (1, 0, 4),
                   (2, 0, 4), (2, 0, 2)])
    # the norm measured fastest at 2048 tokens of Qwen3-4B (16 rows of 256 columns: 16.3
    # us per call against 30.5 for one row per block; 8 x 256 at occupancy 2: 15.4)
    norms = {"norm_rows": 4, "norm_bk": 32} if cfg.hidden_size < 1024 else {
        "norm_rows": 8, "norm_bk": 256, "norm_occupancy": 2}
    return {
        "old": old,
        "new": new,
        # `new` with a wait after every op: what chaining saves on the host
        "sync": new.with_(chained=False),
        # every GEMM persistent (QKV and gate/up as in `new`, walked by 132 blocks)
        "persistent": new.with_(qkv=replace(new.qkv, persistent=True),
                                gate_up=replace(new.gate_up, persistent=True)),
        # residual GEMMs tiled as the old ones but 256x128 with two warpgroups
        "wide": wide,
        # `wide` with the norms walking (rows, columns) tiles of fuller blocks
        **{f"wide_n{r}x{c}" + (f"o{o}" if o else ""): wide.with_(
            norm_rows=r, norm_bk=c, norm_occupancy=o) for r, c, o in norm_tiles},
        # `wide` with the residual GEMMs split over K, adding into hs with atomics
        # (kernels/prefill_splitk.py): 160 tiles of 256x128 are 1.2 waves on 132 SMs
        "splitk": atomic_residuals(wide, "splitk"),            # S by `best_splits`
        "splitk2": atomic_residuals(wide, "splitk", 2),        # half the atomics of S=4
        "hybrid": atomic_residuals(wide, "hybrid"),            # split the last wave only
        "streamk": atomic_residuals(wide, "streamk"),
        # the same with the fastest norm
        "splitk_norm": atomic_residuals(wide, "splitk").with_(**norms),
        "splitk2_norm": atomic_residuals(wide, "splitk", 2).with_(**norms),
        "hybrid_norm": atomic_residuals(wide, "hybrid").with_(**norms),
    }


def atomic_residuals(p: PrefillPlan, kind: str, splits: int = 0) -> PrefillPlan:
    """`p` with the output and down projections on the atomic residual GEMMs."""
    return p.with_(o=replace(p.o, atomic=kind, splits=splits),
                   down=replace(p.down, atomic=kind, splits=splits))


def prefill_plan(cfg: Qwen3Config, variant: str, sms: int) -> PrefillPlan:
    found = variants(cfg, sms)
    if variant not in found:
        raise KeyError(f"no prefill variant {variant!r}; known: {', '.join(found)}")
    return found[variant]


@dataclass(frozen=True)
class PrefillKernels:
    """The kernels a prefill plan launches, with its hints."""

    qkv: cutile.EntryKernel
    o: cutile.EntryKernel
    gate_up: cutile.EntryKernel
    down: cutile.EntryKernel
    attn: cutile.EntryKernel


@functools.cache
def gemm_kernel(which: str, t: GemmTiles) -> cutile.EntryKernel:
    """`which` of "qkv", "residual", "swiglu" in `t`'s schedule, with its hints (a
    residual with `t.atomic`: the atomic kernel of that schedule)."""
    kernel: cutile.EntryKernel
    if which == "residual" and t.atomic:
        kernel = getattr(atomic_residual(t.latency),
                         "streamk" if t.atomic == "streamk" else "splitk")
    else:
        kernel = getattr(prefill_gemms(t.persistent, t.latency), which)
    return kernel.with_hints(**t.hints()) if t.hints() else kernel


@functools.cache
def norm_kernel(looped: bool, occupancy: int | None) -> cutile.EntryKernel:
    """The prefill's norm (`norm_prep`, or `norm_prep_looped`) with its occupancy hint."""
    kernel = prefill.norm_prep_looped if looped else prefill.norm_prep
    return kernel.with_hints(occupancy=occupancy) if occupancy else kernel


@functools.cache
def prefill_kernels(p: PrefillPlan) -> PrefillKernels:
    attn = attn_prefill
    if p.attn_occupancy or p.attn_ctas:
        attn = attn.with_hints(occupancy=p.attn_occupancy, num_ctas=p.attn_ctas)
    return PrefillKernels(gemm_kernel("qkv", p.qkv), gemm_kernel("residual", p.o),
                          gemm_kernel("swiglu", p.gate_up), gemm_kernel("residual", p.down),
                          attn)
