"""The Qwen3 engine on the tiny config against the numpy reference of the same model:
greedy decoding token for token with logits within f32 summation-order error, seeded
sampling token for token and reproducible, and the engine's guards."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from llm.config import preset
from llm.model import Engine, check_config
from llm.plan import plan_for
from llm.reference import Reference, Sampling

# 20 prompt tokens: the prefill (19 tokens) spans two 16-row tiles of the causal attention
PROMPT = [5, 77, 301, 12, 250, 9, 140, 33, 200, 4, 318, 61, 97, 150, 2, 222, 18, 301, 45, 7]
NEW = 6
MAX_SEQ = 40


def assert_same_logits(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """Two plans' logits: to `rtol` on the interpreter (one order of every sum); to bf16
    rounding on the GPU, where the residual stream's atomic adds sum in any order and a
    last-bit change of an f32 sum can flip a bf16 rounding downstream."""
    from cutile.runtime import driver

    if driver.backend() == "gpu":
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * float(np.abs(want).max()))
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def run_engine(weights: Any, sampling: Sampling | None = None, prompt: list[int] = PROMPT,
               new: int = NEW) -> tuple[list[int], list[np.ndarray]]:
    eng = Engine(weights, MAX_SEQ, sampling_=sampling)
    eng.load_prompt(prompt)
    logits = []
    for _ in range(new):
        eng.decode_step()
        logits.append(eng.read_logits())
    assert eng.position() == len(prompt) + new - 1
    return [int(t) for t in eng.token_ids()], logits


def reference(cfg: Any, hf: dict[str, Any]) -> Reference:
    return Reference(cfg, hf, MAX_SEQ, prefill_block=plan_for(cfg).prefill.attn_bm)


@pytest.fixture(scope="module")
def greedy(tiny_weights: Any) -> tuple[list[int], list[np.ndarray]]:
    return run_engine(tiny_weights)


def test_greedy_decoding_matches_the_reference_token_for_token(
        tiny: Any, tiny_hf: dict[str, Any], greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """Tokens exactly; logits within what a bf16 rounding flip allows: the engine and the
    reference sum in different orders, so a value that lands next to a bf16 rounding
    boundary (a cached key, say) may round the other way, one ulp (0.4%) in one element."""
    tokens, logits = greedy
    want_tokens, want_logits = reference(tiny, tiny_hf).generate(PROMPT, NEW)
    assert tokens[:len(PROMPT)] == PROMPT
    assert tokens == want_tokens
    scale = max(float(np.abs(w).max()) for w in want_logits)
    for step, (got, want) in enumerate(zip(logits, want_logits, strict=True)):
        err = float(np.abs(got - want).max())
        assert err <= 1e-2 * scale, f"step {step}: logits off by {err:.3g} (scale {scale:.3g})"


def test_decode_without_prefill_matches_the_reference(tiny: Any, tiny_weights: Any,
                                                      tiny_hf: dict[str, Any]) -> None:
    """A one-token prompt: every position goes through the decode step."""
    tokens, logits = run_engine(tiny_weights, prompt=[42], new=4)
    want_tokens, want_logits = reference(tiny, tiny_hf).generate([42], 4)
    assert tokens == want_tokens
    scale = max(float(np.abs(w).max()) for w in want_logits)
    for step, (got, want) in enumerate(zip(logits, want_logits, strict=True)):
        err = float(np.abs(got - want).max())
        assert err <= 1e-2 * scale, f"step {step}: logits off by {err:.3g} (scale {scale:.3g})"


def test_logits_are_not_degenerate(greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """A model that ignores its input would also match a reference that ignores it: the
    logits move between steps and spread over the vocabulary."""
    _, logits = greedy
    assert all(np.isfinite(lg).all() for lg in logits)
    assert min(float(lg.std()) for lg in logits) > 0.05
    assert float(np.abs(logits[0] - logits[1]).max()) > 0.05


def test_seeded_sampling_matches_the_reference_and_repeats(
        tiny: Any, tiny_weights: Any, tiny_hf: dict[str, Any],
        greedy: tuple[list[int], list[np.ndarray]]) -> None:
    s = Sampling(temperature=0.9, top_k=12, top_p=0.8, seed=5)
    first, _ = run_engine(tiny_weights, s)
    again, _ = run_engine(tiny_weights, s)
    assert first == again
    k = plan_for(tiny).sample_k
    want, _ = reference(tiny, tiny_hf).generate(PROMPT, NEW, s, candidates=k)
    assert first == want
    assert first != greedy[0], "sampling at temperature 0.9 picked the greedy tokens"
    other, _ = run_engine(tiny_weights, Sampling(0.9, 12, 0.8, seed=6))
    assert other != first, "a different seed drew the same tokens"


@pytest.mark.parametrize("setting", [Sampling(0.9, 0, 0.8, seed=5), Sampling(1.1, 40, 1.0, 2)],
                         ids=["top-p alone", "top-k past the candidates"])
def test_sampling_over_the_whole_vocabulary_matches_the_reference(
        tiny: Any, tiny_weights: Any, tiny_hf: dict[str, Any], setting: Sampling) -> None:
    """No top-k, or one above the plan's candidates: `kernels.sample_exact` in the step."""
    k = plan_for(tiny).sample_k
    assert not 1 <= setting.top_k <= k
    got, _ = run_engine(tiny_weights, setting)
    want, _ = reference(tiny, tiny_hf).generate(PROMPT, NEW, setting, candidates=k)
    assert got == want


def test_seeded_sampling_from_the_prefill_draws_the_same_tokens(
        tiny_weights: Any) -> None:
    """The first token sampled by `load_prompt(first_token=True)` and the later ones:
    the draws depend on the seed and the position only, so the sequence is the one the
    first decode step starts."""
    s = Sampling(temperature=0.9, top_k=12, top_p=0.8, seed=5)
    want, _ = run_engine(tiny_weights, s)
    eng = Engine(tiny_weights, MAX_SEQ, sampling_=s)
    eng.load_prompt(PROMPT, first_token=True)
    for _ in range(NEW - 1):
        eng.decode_step()
    assert [int(t) for t in eng.token_ids()] == want


def test_a_tiny_nucleus_is_greedy(tiny_weights: Any,
                                  greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """top_p below the largest probability keeps one candidate: the argmax."""
    got, _ = run_engine(tiny_weights, Sampling(temperature=1.0, top_k=50, top_p=1e-3, seed=1))
    assert got == greedy[0]


def test_pipelined_gemvs_decode_the_same_tokens(tiny: Any, tiny_weights: Any,
                                                greedy: tuple[list[int], list[np.ndarray]]
                                                ) -> None:
    """Every GEMV as a runtime-length loop (`GemvTiles.loop`) instead of unrolled loads."""
    plan = plan_for(tiny)
    plan = plan.with_(**{k: replace(getattr(plan, k), loop=True)
                         for k in ("qkv", "o", "gate_up", "down")})
    eng = Engine(tiny_weights, MAX_SEQ, plan)
    eng.load_prompt(PROMPT)
    for step in range(3):
        eng.decode_step()
        assert_same_logits(eng.read_logits(), greedy[1][step], 1e-5)
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]


def test_chained_steps_decode_the_same_tokens(tiny_weights: Any,
                                              greedy: tuple[list[int], list[np.ndarray]]
                                              ) -> None:
    """`decode_step(chained=True)`: the step's ops enqueued as one chain with one wait
    compute what the ops waited for one by one compute."""
    eng = Engine(tiny_weights, MAX_SEQ)
    ops = eng.ops
    eng.load_prompt(PROMPT)
    for step in range(3):
        eng.decode_step(chained=True)
        # (on the GPU the atomic adds into the residual land in any order)
        assert_same_logits(eng.read_logits(), greedy[1][step], 1e-5)
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]
    assert eng.ops > ops


@pytest.mark.parametrize("prefill", ["hybrid_norm", "old"])   # chained; op by op
def test_a_prefill_to_the_first_token_continues_as_the_decode_steps(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]],
        prefill: str) -> None:
    """`load_prompt(first_token=True)`: the whole prompt through the prefill and the LM
    head on its last row give the first decode step's logits and token (batched GEMMs
    sum in another order than the GEMVs: within bf16 tolerance), and the next steps
    continue the same sequence."""
    eng = Engine(tiny_weights, MAX_SEQ, plan_for(tiny, prefill=prefill))
    eng.load_prompt(PROMPT, first_token=True)
    assert eng.position() == len(PROMPT)
    assert_same_logits(eng.read_logits(), greedy[1][0], 2e-2)
    for step in range(1, 3):
        eng.decode_step()
        assert_same_logits(eng.read_logits(), greedy[1][step], 2e-2)
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]


def test_unfused_mlp_decodes_the_same_tokens(tiny: Any, tiny_weights: Any,
                                             greedy: tuple[list[int], list[np.ndarray]]
                                             ) -> None:
    """The split gate/up GEMV and `swiglu_finish` (one kernel more per layer) instead of
    the fused gate/up + SwiGLU kernel: the same tokens, logits to f32 summation order."""
    plan = plan_for(tiny, mlp_fused=False)
    assert not plan.mlp_fused and plan.gate_up.splits(tiny.hidden_size) > 1
    eng = Engine(tiny_weights, MAX_SEQ, plan)
    eng.load_prompt(PROMPT)
    ops = eng.ops
    for step in range(3):
        eng.decode_step()
        assert_same_logits(eng.read_logits(), greedy[1][step], 1e-4)
    assert (eng.ops - ops) / 3 == 2 + 8 * tiny.num_layers + 1
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]


@pytest.mark.parametrize("path", ["split", "heads"])
def test_combine_in_the_output_projection_decodes_the_same_tokens(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]],
        path: str) -> None:
    """`attn_fused`: attention's combine folded into the output projection, one kernel less
    per layer, on the split path and on the "heads" path; the same tokens, logits to f32
    summation order."""
    plan = plan_for(tiny, attn_fused=True).with_(attn_path=path)
    assert plan.attn_fused and plan.o.KPS * plan.o.BK == tiny.group * tiny.head_dim
    check_config(tiny, plan)
    eng = Engine(tiny_weights, MAX_SEQ, plan)
    eng.load_prompt(PROMPT)
    ops = eng.ops
    for step in range(3):
        eng.decode_step()
        assert_same_logits(eng.read_logits(), greedy[1][step], 1e-4)
    assert (eng.ops - ops) / 3 == 2 + 6 * tiny.num_layers + 1
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]
    with pytest.raises(ValueError, match="combine folded in"):
        check_config(tiny, plan.with_(o=replace(plan.o, KPS=1)))


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_combine_in_the_output_projection_with_pdl_loads_weights_ahead(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]],
        steps: int) -> None:
    """The folded output projection's PDL twin loads its first weight steps (at most its
    KPS tiles) ahead of the wait, before the attention shares it combines, and decodes the
    same tokens."""
    plan = plan_for(tiny, attn_fused=True, pdl=True).with_(attn_path="heads",
                                                           early_steps=steps)
    launched = decode_as_greedy(tiny_weights, plan, greedy)
    for loads, early in loads_ahead_of_the_wait(launched, "gemv_attn_add"):
        assert loads == min(steps, plan.o.KPS) and early == ("w",)


def loads_ahead_of_the_wait(launched: list[Any], entry: str) -> list[tuple[int, tuple[str, ...]]]:
    """For each compiled twin of kernel `entry` among `launched`: the loads before its PDL
    wait, and the parameters the compiler reports loaded there (`pdl_early`)."""
    out = []
    for low in (low for k in set(launched) for low in k._lowered.values()
                if low.entry_name == entry):
        ops = [op.name for op in low.module.functions[0].body.ops]
        out.append((ops[:ops.index("gdc_wait_tko")].count("load_view_tko"), low.pdl_early))
    assert out, f"{entry} was not launched"
    return out


def decode_as_greedy(weights: Any, plan: Any, greedy: tuple[list[int], list[np.ndarray]],
                     tol: float = 1e-5) -> list[Any]:
    """Three decode steps of `plan` after the prompt: the reference plan's tokens, and its
    logits within `tol`. Returns the kernels launched (prefill and decode), in order."""
    eng = Engine(weights, MAX_SEQ, plan)
    launched: list[Any] = []
    eng.observer = lambda kernel, op: launched.append(kernel)
    eng.load_prompt(PROMPT)
    for step in range(3):
        eng.decode_step()
        assert_same_logits(eng.read_logits(), greedy[1][step], tol)
    assert [int(t) for t in eng.token_ids()] == greedy[0][:len(PROMPT) + 3]
    return launched


def test_pdl_plan_decodes_the_same_tokens(tiny: Any, tiny_weights: Any,
                                          greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """`Plan.pdl`: every kernel (prefill and decode) with programmatic dependent launch;
    what each computes is the same, so the tokens are, and the logits too (the atomic
    adds of the residual stream aside, summation order)."""
    plan = plan_for(tiny, pdl=True)
    launched = decode_as_greedy(tiny_weights, plan, greedy)
    assert launched and all(k.pdl_enabled() for k in launched)
    ran = [low for k in set(launched) for low in k._lowered.values()]
    assert ran and all(low.pdl for low in ran)
    most = 2 * max(plan.early(True), plan.early(False))   # gate/up: two tiles a step
    for low in ran:      # the wait first, but after a GEMV's first weight steps
        ops = [op.name for op in low.module.functions[0].body.ops]
        at = ops.index("gdc_wait_tko")
        early = ops[:at].count("load_view_tko")
        assert (1 <= early <= most) if low.pdl_early == ("w",) else (at == 0)
    assert {low.entry_name for low in ran if low.pdl_early} >= {
        "gemv_norm_partial_ss", "gemv_swiglu", "gemv_add", "lm_head_argmax"}


def test_early_trigger_plan_decodes_the_same_tokens(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """`Plan.trigger_first`: the small attention kernels let the next one be scheduled
    before their own wait (`pdl_trigger_first`); the same tokens, and those kernels (only)
    start with the launch of dependents."""
    small = ("qkv_heads", "attn_decode_q", "attn_combine_heads")
    plan = plan_for(tiny, pdl=True).with_(attn_path="heads", trigger_first=small)
    launched = decode_as_greedy(tiny_weights, plan, greedy)
    ran = {low.entry_name: low for k in set(launched) for low in k._lowered.values()}
    assert set(small) <= set(ran)
    for name, low in ran.items():
        first = low.module.functions[0].body.ops[0].name
        assert (first == "gdc_launch_dependents_tko") == (name in small), name


def test_fp_contract_plan_decodes_the_same_tokens(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """`Plan.fp_contract`: every kernel compiled with `fp_contract`. A fused product rounds
    once instead of twice, so the logits move by f32 rounding only and the tokens stay."""
    plan = plan_for(tiny).with_(fp_contract=True)
    launched = decode_as_greedy(tiny_weights, plan, greedy, tol=1e-4)
    assert launched and all(k.fp_contract for k in launched)
    ran = [low for k in set(launched) for low in k._lowered.values()]
    fused = {low.entry_name for low in ran
             if any(op.name == "fma" for op in low.module.functions[0].body.walk())}
    assert {"gemv_swiglu", "qkv_heads"} <= fused


def test_ahead_path_loads_the_position_and_first_cache_tiles_ahead_of_the_wait(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """`Plan.attn_path` "ahead" with PDL: `attn_decode_ahead`'s first ops are the position's
    load and its share's first key and value tiles, all three ahead of the wait (its
    predecessor, `qkv_heads_new`, writes none of them: the cache row is appended by the
    combine after attention), and the step decodes the same tokens."""
    plan = plan_for(tiny, pdl=True).with_(attn_path="ahead")
    launched = decode_as_greedy(tiny_weights, plan, greedy, tol=1e-4)
    names = {k.name for k in launched}
    assert {"qkv_heads_new", "attn_decode_ahead", "attn_combine_cache"} <= names
    assert not {"qkv_heads", "attn_decode_q", "attn_combine_heads"} & names
    for loads, early in loads_ahead_of_the_wait(launched, "attn_decode_ahead"):
        assert loads == 3 and set(early) == {"pos", "kc", "vc"}


def test_the_output_projection_alone_may_load_more_weight_steps_ahead(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]]) -> None:
    """`Plan.early_o`: the output projection (here unrolled, all 4 of its column tiles in
    one split) loads 4 weight steps ahead of its PDL wait, the down projection (looped)
    keeps `early_steps` (2); the same tokens and logits."""
    base = plan_for(tiny, pdl=True)
    plan = base.with_(early_o=4, o=replace(base.o, KPS=4, loop=False),
                      down=replace(base.down, KPS=5, loop=True))
    check_config(tiny, plan)
    assert (plan.early_of("o"), plan.early_of("down"), plan.early_of("qkv")) == (4, 2, 2)
    launched = decode_as_greedy(tiny_weights, plan, greedy)
    want = {"gemv_add": 4, "gemv_add_loop": 2}
    ran = [(low, dict(spec.consts)) for k in set(launched)
           for (spec, _), low in k._lowered.items()
           if low.entry_name in want and k.pdl_enabled()]
    seen = set()
    for low, consts in ran:
        if low.entry_name == "gemv_add" and consts.get("KPS") != 4:
            continue                  # another test's specialization of the same kernel
        ops = [op.name for op in low.module.functions[0].body.ops]
        ahead = ops[:ops.index("gdc_wait_tko")]
        assert ahead.count("load_view_tko") == want[low.entry_name], low.entry_name
        seen.add(low.entry_name)
    assert seen == set(want)
    with pytest.raises(ValueError, match="ahead of the PDL wait"):
        check_config(tiny, plan.with_(early_o=5))


@pytest.mark.parametrize(("steps", "rows"), [(2, None), (4, None), (4, 2)])
def test_pdl_plan_with_weight_steps_ahead_decodes_the_same_tokens(
        tiny: Any, tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]],
        steps: int, rows: int | None) -> None:
    """`Plan.early_steps` (and `early_rows`): each decode GEMV's first 2 or 4 weight steps
    ahead of the PDL wait, in splits of fewer (QKV: 3 tiles, output projection: 2 per
    split, 2 splits), as many or more (down: 5 per split) column tiles, and whole rows of 3
    (gate/up, the LM head), the QKV GEMV unrolled or looped: the same tokens and logits, and
    those loads (no other) before each GEMV's wait."""
    base = plan_for(tiny, pdl=True)
    qkv_loop = rows is not None                # the QKV GEMV looped in one case
    plan = base.with_(early_steps=steps, early_rows=rows,
                      qkv=replace(base.qkv, KPS=3, loop=qkv_loop),
                      o=replace(base.o, KPS=2, loop=True),
                      down=replace(base.down, KPS=5, loop=True))
    check_config(tiny, plan)
    launched = decode_as_greedy(tiny_weights, plan, greedy)
    whole = steps if rows is None else rows
    qkv = "gemv_norm_partial_ss_loop" if qkv_loop else "gemv_norm_partial_ss"
    want = {qkv: steps, "gemv_add_loop": steps, "gemv_swiglu": 2 * whole,
            "lm_head_argmax": whole}
    # every specialization of these kernels (other tests may have compiled more of them)
    ran = [(low, dict(spec.consts)) for k in set(launched)
           for (spec, _), low in k._lowered.items() if low.entry_name in want]
    assert {low.entry_name for low, _ in ran} == set(want)
    for low, consts in ran:
        ops = [op.name for op in low.module.functions[0].body.ops]
        ahead = ops[:ops.index("gdc_wait_tko")]
        count = min(want[low.entry_name], consts.get("KPS", want[low.entry_name]))
        assert ahead.count("load_view_tko") == count, low.entry_name
        assert not [op for op in ahead if op.startswith(("store", "atomic", "for", "if"))]


def test_prompt_guards(tiny_weights: Any) -> None:
    eng = Engine(tiny_weights, 8)
    with pytest.raises(ValueError, match="does not fit"):
        eng.load_prompt(list(range(8)))
    with pytest.raises(ValueError, match="does not fit"):
        eng.load_prompt([])
    with pytest.raises(ValueError, match="token ids"):
        eng.load_prompt([1, 320])


def test_plan_checks(tiny: Any) -> None:
    plan = plan_for(tiny)
    check_config(tiny, plan)
    with pytest.raises(ValueError, match="SwiGLU"):
        check_config(tiny, plan.with_(swiglu_tile=64))
    with pytest.raises(ValueError, match="power of two"):
        check_config(tiny, plan.with_(attn_splits=3))


def test_real_configs_take_pdl_by_default() -> None:
    """Every real config's decode step takes PDL on every kernel unless asked otherwise
    (measured faster on the H200 at 0.6B, 4B and 8B); the interpreter's small test configs
    keep plain launches."""
    for name in ("qwen3-0.6b", "qwen3-4b", "qwen3-8b"):
        assert plan_for(preset(name)).pdl
        assert not plan_for(preset(name), pdl=False).pdl
    assert not plan_for(preset("tiny")).pdl


@pytest.mark.parametrize("chained", [False, True])
@pytest.mark.parametrize("fail_at", [1, 9])
def test_a_launch_that_fails_mid_step_leaves_the_engine_usable(
        tiny_weights: Any, greedy: tuple[list[int], list[np.ndarray]], chained: bool,
        fail_at: int) -> None:
    # An adversarial review (2026-12-07): after a launch of a decode step failed, the
    # slots the step's ops had partitioned kept consumed handles (or None, for a view):
    # every later step raised AttributeError. Now the step raises the launch's typed
    # error, the engine keeps its position, and the next steps decode the same tokens.
    import cutile

    eng = Engine(tiny_weights, MAX_SEQ)
    eng.load_prompt(PROMPT)
    eng.decode_step()
    stream, seen = cutile.Stream(), [0]

    def close_at(kernel: Any, op: Any) -> None:  # the `fail_at`-th op finds it closed
        seen[0] += 1
        if seen[0] == fail_at:
            stream.close()

    eng.observer = close_at
    with cutile.stream(stream), pytest.raises(cutile.BorrowError) as info:
        eng.decode_step(chained=chained)
    assert info.value.code == "CT5061" and seen[0] == fail_at
    eng.observer = None
    assert eng.position() == len(PROMPT)  # the failed step did not advance it
    for _ in range(NEW - 1):
        eng.decode_step(chained=chained)
    tokens, logits = greedy
    assert [int(t) for t in eng.token_ids()] == tokens
    np.testing.assert_allclose(eng.read_logits(), logits[-1], rtol=1e-5, atol=1e-5)
