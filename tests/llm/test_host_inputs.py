"""More of what a user of the Qwen3 engine can get wrong (a second adversarial review of
the host side, after `test_inputs_adversarial.py`): configs written by newer transformers,
quantized checkpoints, seeds and temperatures the device cannot take, a tokenizer that
does not fit the model, a graph dropped without `close()`. Each was a wrong model run in
silence, a hang, or a traceback from deep inside; each is now a typed error or the right
behaviour."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from llm.config import CheckpointError, Qwen3Config, from_hf_dict


@pytest.fixture(scope="module")
def one(tiny: Any) -> Qwen3Config:
    return replace(tiny, num_layers=1)


# -- config.json --------------------------------------------------------------------------

def without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def test_rope_theta_in_rope_parameters_is_read(one: Qwen3Config) -> None:
    """transformers 5 writes RoPE's base inside `rope_parameters` and none at the top
    level: it was read as the default 10000 (Qwen3's is 1e6), every token wrong."""
    hf = without(one.to_hf(), "rope_theta", "rope_scaling")
    cfg = from_hf_dict({**hf, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})
    assert cfg.rope_theta == 1e6
    # `rope_scaling` of the default kind is no scaling: accepted, its base read too
    cfg = from_hf_dict({**hf, "rope_scaling": {"rope_type": "default", "rope_theta": 5e5}})
    assert cfg.rope_theta == 5e5
    assert from_hf_dict({**one.to_hf(), "rope_scaling": {"type": "default"}}) == replace(
        one, name="checkpoint")
    with pytest.raises(CheckpointError, match=r"rope_type 'yarn' is not supported"):
        from_hf_dict({**hf, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6,
                                                "factor": 4.0}})
    with pytest.raises(CheckpointError, match=r"partial_rotary_factor"):
        from_hf_dict({**hf, "rope_parameters": {"rope_theta": 1e6,
                                                "partial_rotary_factor": 0.5}})
    with pytest.raises(CheckpointError, match=r"two RoPE bases"):
        from_hf_dict({**one.to_hf(), "rope_parameters": {"rope_theta": 1e4}})
    with pytest.raises(CheckpointError, match=r"rope_parameters = 3 is not an object"):
        from_hf_dict({**hf, "rope_parameters": 3})


@pytest.mark.parametrize(("key", "value", "match"), [
    ("architectures", 5, "architectures = 5 is not a list"),        # was a TypeError
    ("quantization_config", {"quant_method": "fp8"}, "quantized checkpoint.*'fp8'"),
    ("layer_types", ["full_attention", "sliding_attention"], "layer_types"),
    ("partial_rotary_factor", 0.5, "partial_rotary_factor"),
])
def test_more_config_fields_are_refused(one: Qwen3Config, key: str, value: Any, match: str
                                        ) -> None:
    with pytest.raises(CheckpointError, match=match):
        from_hf_dict({**one.to_hf(), key: value})


def test_null_fields_take_transformers_defaults(one: Qwen3Config) -> None:
    """null is absent in transformers: num_key_value_heads null is as many as the query
    heads, rope_theta null its default; both were refused as missing or not a number."""
    cfg = from_hf_dict({**one.to_hf(), "num_key_value_heads": None, "rope_theta": None,
                        "max_position_embeddings": None, "layer_types": ["full_attention"]})
    assert (cfg.num_kv_heads, cfg.rope_theta, cfg.max_position_embeddings) == (4, 1e4, 40960)
    assert from_hf_dict({**one.to_hf(), "architectures": "Qwen3ForCausalLM"}).hidden_size == 96
    assert np.isclose(from_hf_dict(one.to_hf()).rope_theta, one.rope_theta)


# -- the engine's shapes ------------------------------------------------------------------

def test_a_head_of_64_on_a_small_config_decodes_the_reference_tokens(one: Qwen3Config
                                                                       ) -> None:
    """A small config's prefill QKV tiles were min(head_dim, 32) wide: a head of 64 was
    normed in two halves and every token after the prefill was wrong, with no error (the
    Engine never ran `check_config`). Now the tiles are one head wide."""
    from llm.model import Engine
    from llm.plan import plan_for
    from llm.reference import Reference
    from llm.weights import random_weights

    cfg = replace(one, head_dim=64)
    assert plan_for(cfg).prefill.qkv.BN == 64
    w = random_weights(cfg, seed=2)
    prompt = [5, 7, 9, 11]
    eng = Engine(w, 16)
    eng.load_prompt(prompt)
    for _ in range(3):
        eng.decode_step()
    ref = Reference(cfg, w.to_hf(), 16, prefill_block=plan_for(cfg).prefill.attn_bm)
    assert [int(t) for t in eng.token_ids()] == ref.generate(prompt, 3)[0]


def test_the_engine_refuses_shapes_its_kernels_cannot_take(one: Qwen3Config) -> None:
    """head_dim 48 was a KernelCheckError from inside the first prefill's kernel."""
    from llm.model import Engine
    from llm.weights import random_weights

    with pytest.raises(ValueError, match=r"head_dim 48 must be a power of two"):
        Engine(random_weights(replace(one, head_dim=48), seed=2), 16)


# -- sampling settings --------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "match"), [
    ({"seed": 2**32}, r"seed must be an integer in \[0, 2\*\*32\)"),   # was seed 0's draws
    ({"seed": 2**64}, "seed"),
    ({"temperature": 1e-45}, "temperature must be 0 .greedy. or at least 2.939e-39"),
])
def test_sampling_the_device_cannot_take_is_refused(kw: dict[str, Any], match: str) -> None:
    from llm.reference import Sampling

    with pytest.raises(ValueError, match=match):
        Sampling(temperature=kw.pop("temperature", 1.0), **kw)


def test_the_smallest_temperature_samples_as_greedy(one: Qwen3Config) -> None:
    """1e-45 overflowed 1 / temperature in f32: a LaunchError (CT6102) from inside the
    first sampled step. The smallest temperature taken decodes the greedy tokens, on the
    top-k candidates and over the whole vocabulary alike."""
    from llm.model import Engine
    from llm.reference import MIN_TEMPERATURE, Sampling
    from llm.weights import random_weights

    w = random_weights(one, seed=1)

    def run(s: Sampling) -> list[int]:
        eng = Engine(w, 8, sampling_=s)
        eng.load_prompt([1, 2, 3], first_token=True)
        eng.decode_step()
        return [int(t) for t in eng.token_ids()]

    greedy = run(Sampling())
    assert run(Sampling(MIN_TEMPERATURE, top_k=5)) == greedy
    assert run(Sampling(MIN_TEMPERATURE, top_k=0, seed=2**32 - 1)) == greedy


def test_random_weights_refuse_a_seed_they_would_alias(one: Qwen3Config) -> None:
    from llm.weights import random_weights

    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32\)"):
        random_weights(one, seed=2**32)          # made seed 0's weights


@pytest.mark.parametrize(("args", "match"), [
    (["--seed", str(2**32)], "--seed must be an integer in [0, 2**32)"),
    (["--temperature", "1e-45"], "--temperature must be 0 (greedy) or at least"),
])
def test_sampling_flags_the_device_cannot_take(capsys: pytest.CaptureFixture[str],
                                               args: list[str], match: str) -> None:
    from llm import generate

    with pytest.raises(SystemExit) as exit_:
        generate.main(["--random-weights", "tiny", "--no-progress", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and match in err and "Traceback" not in err


# -- generate.py --------------------------------------------------------------------------

RUN = ["--no-progress", "--copy-mib", "0.01"]


@pytest.fixture
def checkpoint(tmp_path: Any, one: Qwen3Config, tiny_hf: dict[str, Any]) -> Any:
    from llm.weights import save_checkpoint

    return save_checkpoint(tmp_path, one, {k: v for k, v in tiny_hf.items()
                                           if not k.startswith("model.layers.1.")})


def test_a_tokenizer_of_a_larger_vocabulary(checkpoint: Any) -> None:
    """Its ids past the model's vocabulary were a ValueError traceback from
    Engine.load_prompt."""
    from llm import generate

    tokenizers = pytest.importorskip("tokenizers")
    vocab = {f"w{i}": i for i in range(400)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(checkpoint / "tokenizer.json"))
    with pytest.raises(SystemExit, match=r"generate.py: error: tokenizer.json gives token id "
                                         r"350, outside the model's vocabulary \[0, 320\)"):
        generate.main(["--checkpoint", str(checkpoint), "--prompt", "w1 w350", *RUN])
    report = generate.main(["--checkpoint", str(checkpoint), "--prompt", "w1 w300",
                            "--new-tokens", "2", *RUN])
    assert len(report["tokens"]) == 2


def test_a_tokenizer_json_without_the_package(checkpoint: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `tokenizers` installed, a checkpoint's tokenizer.json was an ImportError
    traceback, even for --prompt-ids."""
    from llm import generate

    (checkpoint / "tokenizer.json").write_text("{}")
    monkeypatch.setitem(__import__("sys").modules, "tokenizers", None)
    with pytest.raises(SystemExit, match=r"generate.py: error: .*needs the `tokenizers` "
                                         r"package"):
        generate.main(["--checkpoint", str(checkpoint), "--prompt-ids", "1,2", *RUN])


def test_more_layers_than_the_config_has(capsys: pytest.CaptureFixture[str]) -> None:
    """--layers 10**9 with random weights made layers one by one until the memory ran out
    (hours on the interpreter); "use only this many layers" takes at most the config's."""
    from llm import generate

    with pytest.raises(SystemExit, match=r"--layers 1000000000: the config has 2"):
        generate.main(["--random-weights", "tiny", "--layers", str(10**9), *RUN])


def test_prompt_without_tokenizer_and_past_the_trained_positions(
        capsys: pytest.CaptureFixture[str]) -> None:
    from llm import generate

    with pytest.raises(SystemExit, match=r"^generate.py: error: --prompt needs a checkpoint"):
        generate.main(["--random-weights", "tiny", "--prompt", "hi", *RUN])
    generate.main(["--random-weights", "tiny", "--layers", "1", "--prompt-len", "511",
                   "--new-tokens", "2", "--op-by-op", *RUN])
    assert "past the model's max_position_embeddings (512)" in capsys.readouterr().err


# -- checkpoint dtypes --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_value_past_bf16s_range_is_refused(checkpoint: Any, dtype: Any) -> None:
    """f32/f64 tensors are converted to bf16: a value past its range became inf in
    silence (every logit NaN). In range, the conversion is bf16's rounding."""
    from llm.weights import layer_name, load_checkpoint
    from safetensors.numpy import load_file, save_file

    down = layer_name(0, "mlp.down_proj")
    tensors = load_file(str(checkpoint / "model.safetensors"))
    w = tensors[down].astype(dtype)
    save_file({**tensors, down: w}, str(checkpoint / "model.safetensors"))
    got = load_checkpoint(checkpoint).layers[0].wd.to_numpy()
    np.testing.assert_array_equal(got.view(np.uint16), tensors[down].view(np.uint16))
    w[3, 5] = 1e300 if dtype == np.float64 else np.finfo(np.float32).max
    save_file({**tensors, down: w}, str(checkpoint / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"down_proj.weight in model.safetensors: F\d\d "
                                              r"value .* past bf16's range"):
        load_checkpoint(checkpoint)


# -- the engine's state -------------------------------------------------------------------

@pytest.fixture(scope="module")
def one_weights(one: Qwen3Config) -> Any:
    from llm.weights import random_weights

    return random_weights(one, seed=1)


def test_a_graph_dropped_without_close_gives_the_engine_its_position(one_weights: Any
                                                                     ) -> None:
    """Dropped without close(), the graph gave the buffers back but the engine kept the
    position of the capture: the capacity guard let a step past the last position through
    to a device check (CT6910 from inside the sampling kernel)."""
    import gc

    from llm.model import CapacityError, Engine

    eng = Engine(one_weights, 8)
    eng.load_prompt([1, 2, 3], first_token=True)
    g = eng.capture_decode()
    for _ in range(4):
        g.step()
    launches = g.launches
    ops = eng.ops
    want = [int(t) for t in g.token_ids()]
    del g
    gc.collect()
    with pytest.raises(CapacityError, match=r"from position 7 would write past the 8"):
        eng.decode_step()
    assert [int(t) for t in eng.token_ids()] == want and len(want) == 8
    assert eng.ops == ops + 4 * launches


def test_sampling_cannot_change_under_an_open_graph(one_weights: Any) -> None:
    """A graph keeps the sampling it was captured with: setting another one meanwhile was
    ignored in silence (greedy tokens on). Op by op, greedy and sampled steps mix."""
    from llm.model import Engine, EngineStateError
    from llm.plan import plan_for
    from llm.reference import Reference, Sampling, sample

    eng = Engine(one_weights, 16)
    eng.load_prompt([1, 2, 3], first_token=True)
    hot = Sampling(1.0, top_k=5, seed=3)
    with eng.capture_decode() as g:
        g.step()
        with pytest.raises(EngineStateError, match=r"close\(\) it, set the sampling"):
            eng.sampling = hot
        g.close()                                    # (closing twice does nothing)
    with pytest.raises(TypeError, match=r"Sampling"):
        eng.sampling = 0.7                           # type: ignore[assignment]
    eng.sampling = hot
    eng.decode_step()
    eng.sampling = Sampling()
    eng.decode_step()
    got = [int(t) for t in eng.token_ids()]
    # the reference, step by step with the same switches
    cfg = one_weights.cfg
    ref = Reference(cfg, one_weights.to_hf(), 16, prefill_block=plan_for(cfg).prefill.attn_bm)
    tokens = [1, 2, 3]
    ref.forward(np.array(tokens[:-1]), 0, prefill=True)
    for s in (Sampling(), Sampling(), hot, Sampling()):
        h = ref.forward(np.array(tokens[-1:]), len(tokens) - 1, prefill=False)
        tokens.append(sample(ref.logits(h[-1]), len(tokens) - 1, s, plan_for(cfg).sample_k))
    assert got == tokens


def test_decoding_before_a_prompt_is_refused(one_weights: Any) -> None:
    """A fresh engine's token buffer is zeros: a step went on from token 0 in silence."""
    from llm.model import Engine, EngineStateError

    eng = Engine(one_weights, 8)
    with pytest.raises(EngineStateError, match=r"load_prompt\(ids\) first"):
        eng.decode_step()
    with pytest.raises(EngineStateError, match=r"load_prompt"):
        eng.capture_decode()
    eng.load_prompt([4])
    eng.decode_step()
    assert len(eng.token_ids()) == 2


def test_the_engine_takes_weights_not_a_dict(one_weights: Any) -> None:
    """A dict of Hugging Face tensors (`Weights.to_hf()`) was an AttributeError."""
    from llm.model import Engine

    with pytest.raises(TypeError, match=r"Engine takes llm.weights.Weights.*got dict"):
        Engine(one_weights.to_hf(), 8)
    with pytest.raises(TypeError, match=r"Sampling"):
        Engine(one_weights, 8, sampling_=0.7)             # type: ignore[arg-type]
