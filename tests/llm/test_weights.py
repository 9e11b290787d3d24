"""Qwen3 configs and weights: the published shapes, config.json both ways, a Hugging Face
checkpoint written with `safetensors` and read back, and random weights that the host can
recompute bit for bit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from llm.config import PRESETS, from_checkpoint, from_hf_dict, preset
from llm.reference import uniform_weights
from llm.weights import (
    EMBED,
    LM_HEAD,
    layer_name,
    load_checkpoint,
    random_spec,
    random_weights,
    save_checkpoint,
    tensor_seed,
)

pytest.importorskip("safetensors")

# Hugging Face's Qwen/Qwen3-4B config.json (the fields the engine reads)
QWEN3_4B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128,
            "hidden_size": 2560, "intermediate_size": 9728, "max_position_embeddings": 40960,
            "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
            "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
            "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 151936}


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def test_presets_have_the_published_shapes() -> None:
    assert from_hf_dict(QWEN3_4B, "qwen3-4b") == preset("qwen3-4b")
    counts = {name: round(c.param_count() / 1e9, 2) for name, c in PRESETS.items()
              if name != "tiny"}
    assert counts == {"qwen3-0.6b": 0.6, "qwen3-1.7b": 1.72, "qwen3-4b": 4.02,
                      "qwen3-8b": 8.19}
    assert not preset("qwen3-8b").tie_word_embeddings
    with pytest.raises(KeyError, match="known"):
        preset("qwen3-14b")


def test_config_json_round_trip_and_refusals(tiny: Any) -> None:
    assert from_hf_dict(tiny.to_hf(), "tiny") == tiny
    with pytest.raises(ValueError, match="not a Qwen3"):
        from_hf_dict({**QWEN3_4B, "model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    with pytest.raises(ValueError, match="rope_scaling"):
        from_hf_dict({**QWEN3_4B, "rope_scaling": {"type": "yarn", "factor": 4.0}})
    with pytest.raises(ValueError, match="groups"):
        from_hf_dict({**QWEN3_4B, "num_key_value_heads": 5})


def test_checkpoint_round_trip(tmp_path: Path, tiny: Any, tiny_hf: dict[str, np.ndarray]
                               ) -> None:
    save_checkpoint(tmp_path, tiny, tiny_hf)
    assert json.loads((tmp_path / "config.json").read_text())["num_hidden_layers"] == 2
    assert from_checkpoint(tmp_path) == replace(tiny, name=tmp_path.name)
    loaded = load_checkpoint(tmp_path)
    back = loaded.to_hf()
    assert back.keys() == tiny_hf.keys()
    assert len(tiny_hf) == 2 + 1 + 11 * tiny.num_layers          # embed, norm, head, layers
    for name, want in tiny_hf.items():
        assert back[name].dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(bits(back[name]), bits(want), err_msg=name)
    assert loaded.lm_head is not loaded.embed


def test_tied_checkpoint_reads_the_embedding_as_the_head(tmp_path: Path, tiny: Any) -> None:
    cfg = replace(tiny, tie_word_embeddings=True, num_layers=1)
    hf = random_weights(cfg, seed=3).to_hf()
    assert LM_HEAD not in hf
    save_checkpoint(tmp_path, cfg, hf)
    loaded = load_checkpoint(tmp_path)
    assert loaded.lm_head is loaded.embed
    np.testing.assert_array_equal(bits(loaded.lm_head.to_numpy()), bits(hf[EMBED]))


def test_sharded_f32_checkpoint(tmp_path: Path, tiny: Any, tiny_hf: dict[str, np.ndarray]
                                ) -> None:
    """Tensors spread over two files, in f32: read from both, converted to bf16."""
    from safetensors.numpy import save_file

    cfg = replace(tiny, num_layers=1)
    names = [n for n in tiny_hf if not n.startswith("model.layers.1.")]
    half = len(names) // 2
    for i, part in enumerate((names[:half], names[half:])):
        save_file({n: tiny_hf[n].astype(np.float32) for n in part},
                  str(tmp_path / f"model-0000{i + 1}-of-00002.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(cfg.to_hf()))
    back = load_checkpoint(tmp_path).to_hf()
    for n in names:
        np.testing.assert_array_equal(bits(back[n]), bits(tiny_hf[n]), err_msg=n)


def test_checkpoint_errors(tmp_path: Path, tiny: Any, tiny_hf: dict[str, np.ndarray]) -> None:
    (tmp_path / "config.json").write_text(json.dumps(tiny.to_hf()))
    with pytest.raises(FileNotFoundError, match="safetensors"):
        load_checkpoint(tmp_path)
    missing = {k: v for k, v in tiny_hf.items() if k != layer_name(1, "mlp.up_proj")}
    save_checkpoint(tmp_path, tiny, missing)
    with pytest.raises(KeyError, match="up_proj"):
        load_checkpoint(tmp_path)
    wrong = dict(tiny_hf)
    wrong[layer_name(0, "self_attn.o_proj")] = tiny_hf[layer_name(0, "self_attn.o_proj")][:, :64]
    save_checkpoint(tmp_path, tiny, wrong)
    with pytest.raises(ValueError, match="o_proj"):
        load_checkpoint(tmp_path)


def test_random_weights_are_the_host_hash(tiny: Any, tiny_weights: Any) -> None:
    """Device-made weights equal the host's recomputation bit for bit, with the intended
    spread: std 0.02 for projections, [0.9, 1.1] for norm weights."""
    lw = tiny_weights.layers[1]
    cases = [(lw.wqkv, layer_name(1, "wqkv")), (lw.q_norm, layer_name(1, "self_attn.q_norm")),
             (tiny_weights.embed, EMBED)]
    for t, name in cases:
        scale, offset = random_spec(name)
        want = uniform_weights(t.shape, tensor_seed(7, name), scale, offset)
        np.testing.assert_array_equal(bits(t.to_numpy()), bits(want), err_msg=name)
    qkv = lw.wqkv.to_numpy().astype(np.float64)
    assert abs(qkv.std() - 0.02) < 0.002 and abs(qkv.mean()) < 0.002
    norm = lw.attn_norm.to_numpy().astype(np.float64)
    assert 0.9 <= norm.min() and norm.max() <= 1.1 and norm.std() > 0.03
    assert not np.array_equal(bits(lw.wqkv.to_numpy()),
                              bits(tiny_weights.layers[0].wqkv.to_numpy()))
