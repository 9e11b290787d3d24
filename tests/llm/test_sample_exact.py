"""Sampling over the whole vocabulary (`llm.kernels.sample_exact`): no top-k, or a top-k
above the candidate path's K. The kernel against the host algorithm token for token, and
the host algorithm's kept set against Hugging Face's warpers, written out here as
transformers writes them (`TopKLogitsWarper`, `TopPLogitsWarper`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from llm.kernels import sample_exact as kernel
from llm.model import Out, Slot, give_back, out, take
from llm.reference import Sampling, exact_kept, order_key, sample, sample_exact

from cutile import api

SETTINGS = [Sampling(0.8, 0, 0.9, seed=3), Sampling(1.0, 200, 1.0, seed=4),
            Sampling(0.7, 300, 0.5, seed=5), Sampling(1.2, 0, 1.0, seed=6),
            Sampling(1.0, 1, 1.0, seed=7), Sampling(1.0, 100, 0.999, seed=8)]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261207)


def exact_slots(vocab: int, ch: int) -> SimpleNamespace:
    """`kernels.sample_exact`'s buffers as the engine's slots (random contents: every
    kernel must write what the next one reads)."""
    bufs = {}
    for name, (shape, dtype, copies) in kernel.buffer_shapes(vocab, ch).items():
        noise = [np.random.default_rng(len(name) + i).standard_normal(shape) * 100
                 for i in range(copies)]
        slots = [Slot(api.from_numpy(x.astype(dtype.numpy_name)), name) for x in noise]
        bufs[name] = slots if copies > 1 else slots[0]
    return SimpleNamespace(**bufs)


def run_op(kern: Any, *args: Any, **kw: Any) -> None:
    """A launch as the engine makes one: `Out` slots partitioned, given back after."""
    bound = [take(a) if isinstance(a, Out) else a.t if isinstance(a, Slot) else a for a in args]
    back = kern(*bound, **kw).sync()
    for a, got in zip(args, back, strict=False):
        if isinstance(a, Out):
            give_back(a, got)


def run_kernel(logits: np.ndarray, at: int, s: Sampling, ch: int = 128) -> int:
    v = logits.size
    tokens = Slot(api.from_numpy(np.full(16, -7, np.int32)), "tokens")
    pos = Slot(api.from_numpy(np.array([at], np.int32)), "pos")
    kernel.launch_sample_exact(run_op, out, exact_slots(v, ch), out(tokens, 16), out(pos, 1),
                               api.from_numpy(logits), v, 1.0 / s.temperature, s.top_p,
                               s.top_k, s.seed, ch)
    got = tokens.numpy()
    assert int(pos.numpy()[0]) == at + 1
    assert (np.delete(got, at + 1) == -7).all(), "wrote outside tokens[pos + 1]"
    return int(got[at + 1])


def hf_kept(logits: np.ndarray, s: Sampling) -> np.ndarray:
    """transformers' temperature, top-k and top-p warpers, in its order, as a kept mask."""
    z = logits.astype(np.float64) / s.temperature
    if s.top_k:
        k = min(s.top_k, z.size)
        z = np.where(z < np.sort(z)[-k], -np.inf, z)             # ties at the k-th kept
    if s.top_p < 1.0:
        order = np.argsort(z, kind="stable")                      # ascending
        p = np.exp(z[order] - z.max())
        cum = np.cumsum(p / p.sum())
        remove = cum <= 1 - s.top_p
        remove[-1] = False                                        # the largest stays
        z[order[remove]] = -np.inf
    return np.isfinite(z)


def test_order_keys_sort_as_the_floats_do(rng: np.random.Generator) -> None:
    x = np.concatenate([rng.standard_normal(500) * 10, [0.0, -1e-38, 1e-38, 3e38, -3e38,
                                                        np.inf, -np.inf]]).astype(np.float32)
    k = order_key(x)
    assert k.dtype == np.int32
    assert (np.less.outer(k, k) == np.less.outer(x, x)).all()


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_the_kernel_draws_the_host_algorithms_token(rng: np.random.Generator,
                                                    setting: Sampling) -> None:
    for trial in range(2):
        logits = (rng.standard_normal(600) * 3).astype(np.float32)   # 5 tiles, the last ragged
        at = 3 + trial
        got = run_kernel(logits, at, setting)
        assert got == sample_exact(logits, at, setting)
        assert exact_kept(logits, setting)[0][got]
    if setting.top_k == 1:
        assert got == int(np.argmax(logits))


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_the_kept_tokens_are_hugging_faces(rng: np.random.Generator, setting: Sampling
                                           ) -> None:
    for _ in range(20):
        logits = (rng.standard_normal(5000) * rng.uniform(0.5, 6)).astype(np.float32)
        kept, _ = exact_kept(logits, setting)
        want = hf_kept(logits, setting)
        # a token whose top-p fate is decided within f32 rounding may part; none here
        assert (kept == want).all(), (np.flatnonzero(kept != want), setting)


def test_ties_at_the_kth_logit_are_all_kept() -> None:
    logits = np.array([5.0, 1.0, 3.0, 3.0, 3.0, 0.5, 3.0, -2.0], np.float32)
    kept, _ = exact_kept(logits, Sampling(1.0, 2, 1.0))
    assert kept.tolist() == [True, False, True, True, True, False, True, False]
    for at in range(4):
        assert logits[run_kernel(logits, at, Sampling(1.0, 2, 1.0, seed=at), ch=4)] >= 3.0


@pytest.mark.parametrize("setting", [Sampling(1.0, 0, 0.9, seed=9), Sampling(0.5, 70, 0.6, 10)],
                         ids=str)
def test_masked_and_tied_logits_across_chunks(rng: np.random.Generator, setting: Sampling
                                              ) -> None:
    """-inf logits (masked tokens), long runs of equal logits across chunk boundaries and
    negative zero: the radix rounds split ties and signs as the host's sort does."""
    for at in range(3):
        logits = np.round(rng.standard_normal(1000) * 2).astype(np.float32)
        logits[rng.random(1000) < 0.3] = -np.inf
        logits[rng.random(1000) < 0.05] = -0.0
        got = run_kernel(logits, at, setting, ch=64)
        assert got == sample_exact(logits, at, setting)
        assert exact_kept(logits, setting)[0][got] and np.isfinite(logits[got])


@pytest.mark.parametrize(("vocab", "ch"), [(100, 128), (128, 128), (256, 128), (7, 4), (1, 4)])
def test_one_chunk_whole_chunks_and_a_single_logit(rng: np.random.Generator, vocab: int,
                                                   ch: int) -> None:
    """Grids of one block, of chunks that divide the vocabulary, and a vocabulary of one."""
    for s in (Sampling(0.8, 0, 0.9, seed=3), Sampling(1.0, 3, 0.95, seed=4),
              Sampling(1.0, 0, 1.0, seed=5)):
        x = (rng.standard_normal(vocab) * 3).astype(np.float32)
        for at in range(2):
            assert run_kernel(x, at, s, ch=ch) == sample_exact(x, at, s)


def test_the_draws_follow_the_kept_distribution(rng: np.random.Generator) -> None:
    """The host algorithm (which the kernel matches draw for draw) over 20000 positions:
    each kept token drawn at its renormalized probability, no other token drawn."""
    logits = (rng.standard_normal(40) * 1.5).astype(np.float32)
    s = Sampling(0.8, 0, 0.7, seed=11)
    kept, e = exact_kept(logits, s)
    want = np.where(kept, e, 0) / e[kept].sum()
    n = 20000
    counts = np.bincount([sample_exact(logits, at, s) for at in range(n)], minlength=40)
    assert (counts[~kept] == 0).all()
    sd = np.sqrt(want * (1 - want) / n)
    assert (np.abs(counts / n - want) <= 5 * sd + 1e-9).all()


def test_the_engine_takes_the_whole_vocabulary_past_its_candidates() -> None:
    """`sample` (the engine's choice) takes the candidate path for 1 <= top_k <= K only."""
    logits = np.linspace(-3, 3, 300).astype(np.float32)[::-1].copy()
    s = Sampling(1.0, 100, 1.0, seed=2)
    draws = {sample(logits, at, s, candidates=16) for at in range(400)}
    assert max(draws) >= 16, "top-k 100 drew only from the 16 largest"
    assert max(draws) < 100


@pytest.mark.gpu
@pytest.mark.parametrize("setting", [Sampling(0.7, 0, 0.9, seed=1), Sampling(1.0, 500, 0.95, 2)],
                         ids=str)
def test_the_kernel_draws_the_host_algorithms_token_at_qwen3s_vocabulary(
        rng: np.random.Generator, setting: Sampling) -> None:
    """On the GPU, at Qwen3's 151936 logits in the engine's 1024-wide chunks: a kept token,
    where the draw falls in the kept mass summed in f64. (Not token for token: over 150k
    terms the device's and numpy's f32 running sums part by more than one token's mass.)"""
    from llm.reference import uniform

    for at in range(6):
        logits = (rng.standard_normal(151936) * 2.5).astype(np.float32)
        got = run_kernel(logits, at, setting, ch=1024)
        kept, e = exact_kept(logits, setting)
        assert kept[got]
        cdf = np.cumsum(np.where(kept, e, 0).astype(np.float64))
        u = float(uniform(at, setting.seed)[()]) * cdf[-1]
        lo = cdf[got - 1] if got else 0.0
        assert lo - 1e-4 * cdf[-1] <= u <= cdf[got] + 1e-4 * cdf[-1], (got, lo, u, cdf[got])
