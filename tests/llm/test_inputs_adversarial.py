"""Bad inputs to the Qwen3 engine, as a user of generate.py or the engine's Python API
gives them: each is a typed error that names the problem (CheckpointError and its
subclasses, CapacityError, ValueError, or a one-line CLI error), never a traceback from
inside json/safetensors/numpy/cutile and never a wrong model loaded in silence."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llm import generate
from llm.config import (
    CheckpointError,
    CheckpointFileError,
    MissingTensorError,
    Qwen3Config,
    from_checkpoint,
    from_hf_dict,
)
from llm.model import CapacityError, Engine
from llm.reference import Sampling
from llm.weights import EMBED, LM_HEAD, layer_name, load_checkpoint

pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def one(tiny: Any) -> Qwen3Config:
    """The tiny config with one layer (every checkpoint here is written a few times)."""
    return replace(tiny, num_layers=1)


@pytest.fixture(scope="module")
def one_hf(one: Qwen3Config, tiny_hf: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in tiny_hf.items() if not k.startswith("model.layers.1.")}


@pytest.fixture(scope="module")
def one_weights(one: Qwen3Config) -> Any:
    from llm.weights import random_weights

    return random_weights(one, seed=1)


def write(d: Path, cfg: Qwen3Config, tensors: dict[str, np.ndarray],
          config: dict[str, Any] | None = None) -> Path:
    """config.json and model.safetensors, the tensors as given (save_checkpoint would make
    them bf16)."""
    from safetensors.numpy import save_file

    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg.to_hf() if config is None else config))
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              str(d / "model.safetensors"))
    return d


# -- config.json --------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["hidden_size", "num_attention_heads", "num_hidden_layers",
                                 "intermediate_size", "vocab_size"])
def test_a_missing_config_field_is_named(one: Qwen3Config, key: str) -> None:
    with pytest.raises(CheckpointError, match=rf"no '{key}'"):
        from_hf_dict({k: v for k, v in one.to_hf().items() if k != key})


@pytest.mark.parametrize(("key", "value", "match"), [
    ("hidden_size", 0, "hidden_size must be a positive integer"),
    ("hidden_size", -96, "hidden_size must be a positive integer"),
    ("hidden_size", "abc", "hidden_size = 'abc' is not an integer"),
    ("hidden_size", 96.5, "is not an integer"),          # was truncated to 96
    ("hidden_size", True, "is not an integer"),          # was read as 1
    ("num_key_value_heads", 0, "num_kv_heads must be a positive"),   # was ZeroDivisionError
    ("num_attention_heads", 0, "num_heads must be a positive"),
    ("num_key_value_heads", 3, "groups"),
    ("vocab_size", 0, "vocab_size must be a positive"),
    ("num_hidden_layers", 0, "num_layers must be a positive"),
    ("head_dim", 33, "even head_dim"),
    ("rope_theta", -1, "rope_theta must be a positive"),
    ("rope_theta", "x", "rope_theta = 'x' is not a number"),
    ("rms_norm_eps", -1, "rms_norm_eps"),
    ("tie_word_embeddings", "false", "tie_word_embeddings"),   # was read as True
    ("attention_bias", True, "attention_bias"),            # biases were ignored
    ("hidden_act", "gelu", "hidden_act"),
    ("use_sliding_window", True, "use_sliding_window"),
    ("model_type", "llama", "not a Qwen3"),
    ("rope_scaling", {"type": "yarn", "factor": 4.0}, "rope_scaling"),
])
def test_a_bad_config_field_is_refused(one: Qwen3Config, key: str, value: Any, match: str
                                       ) -> None:
    with pytest.raises(CheckpointError, match=match):
        from_hf_dict({**one.to_hf(), key: value})


def test_head_dim_from_heads_must_divide(one: Qwen3Config) -> None:
    cfg = {k: v for k, v in one.to_hf().items() if k != "head_dim"}
    with pytest.raises(CheckpointError, match=r"does not split into 4 heads"):
        from_hf_dict({**cfg, "hidden_size": 97})
    assert from_hf_dict({**cfg, "hidden_size": 128}).head_dim == 32
    with pytest.raises(CheckpointError, match=r"holds a list"):
        from_hf_dict([1])  # type: ignore[arg-type]


def test_the_api_config_checks_its_sizes(one: Qwen3Config) -> None:
    with pytest.raises(ValueError, match=r"num_kv_heads must be a positive"):
        replace(one, num_kv_heads=0)


def test_checkpoint_directory_problems(tmp_path: Path, one: Qwen3Config) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointFileError, match=r"config.json: no such file"):
        load_checkpoint(tmp_path / "empty")
    with pytest.raises(CheckpointFileError, match=r"does not exist"):
        load_checkpoint(tmp_path / "nope")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(CheckpointFileError, match=r"is not a directory"):
        load_checkpoint(tmp_path / "afile")
    bad = tmp_path / "badjson"
    bad.mkdir()
    (bad / "config.json").write_text("{nope")
    with pytest.raises(CheckpointError, match=r"config.json: not readable JSON"):
        from_checkpoint(bad)
    (bad / "config.json").write_text(json.dumps({**one.to_hf(), "vocab_size": 0}))
    with pytest.raises(CheckpointError, match=r"badjson: config.json: .*vocab_size"):
        from_checkpoint(bad)


# -- safetensors --------------------------------------------------------------------------

def test_unreadable_safetensors_name_the_file(tmp_path: Path, one: Qwen3Config,
                                              one_hf: dict[str, np.ndarray]) -> None:
    d = write(tmp_path, one, one_hf)
    f = d / "model.safetensors"
    data = f.read_bytes()
    for cut in (data[:1000], data[:-10], b"\0\0\0"):
        f.write_bytes(cut)
        with pytest.raises(CheckpointError, match=r"model.safetensors: not a readable"):
            load_checkpoint(d)


@pytest.mark.parametrize("extra", ["model.layers.0.self_attn.q_proj.bias",
                                   "model.layers.1.mlp.down_proj.weight", "rotary.inv_freq"])
def test_a_tensor_the_config_does_not_account_for(tmp_path: Path, one: Qwen3Config,
                                                  one_hf: dict[str, np.ndarray], extra: str
                                                  ) -> None:
    """A bias or a layer past the config's count was ignored: another model ran."""
    d = write(tmp_path, one, {**one_hf, extra: np.zeros(8, np.float32)})
    with pytest.raises(CheckpointError, match=rf"does not account for.*{extra}"):
        load_checkpoint(d)


def test_a_caller_may_read_fewer_layers(tmp_path: Path, tiny: Qwen3Config, one: Qwen3Config,
                                        tiny_hf: dict[str, np.ndarray]) -> None:
    """A cfg given by the caller (generate.py --layers) reads the first layers; a
    config.json of fewer layers than the files hold is refused."""
    d = write(tmp_path, tiny, tiny_hf)
    assert len(load_checkpoint(d, cfg=one).layers) == 1
    write(tmp_path, one, tiny_hf)
    with pytest.raises(CheckpointError, match=r"does not account for.*layers.1"):
        load_checkpoint(d)


def test_wrong_dtype_and_shape(tmp_path: Path, one: Qwen3Config,
                               one_hf: dict[str, np.ndarray]) -> None:
    down = layer_name(0, "mlp.down_proj")
    d = write(tmp_path, one, {**one_hf, down: one_hf[down].astype(np.float16)})
    assert load_checkpoint(d).layers[0].wd.shape == (96, 160)     # converted, as documented
    write(tmp_path, one, {**one_hf, down: np.ones((96, 160), np.int8)})
    with pytest.raises(CheckpointError, match=r"dtype I8.*not quantized"):
        load_checkpoint(d)
    write(tmp_path, one, {**one_hf, down: np.ascontiguousarray(one_hf[down].T)})
    with pytest.raises(CheckpointError, match=r"down_proj.weight: shape \(160, 96\)"):
        load_checkpoint(d)
    write(tmp_path, one, {**one_hf, down: one_hf[down].reshape(160, 96)})
    with pytest.raises(CheckpointError, match=r"shape"):           # never reshaped to fit
        load_checkpoint(d)


def test_tied_and_untied_declared_wrong(tmp_path: Path, one: Qwen3Config,
                                        one_hf: dict[str, np.ndarray]) -> None:
    d = write(tmp_path, one, {k: v for k, v in one_hf.items() if k != LM_HEAD})
    with pytest.raises(MissingTensorError, match=r"lm_head.weight.*tie_word_embeddings false"):
        load_checkpoint(d)
    write(tmp_path, one, one_hf, {**one.to_hf(), "tie_word_embeddings": True})
    with pytest.raises(CheckpointError, match=r"tie_word_embeddings true.*differs"):
        load_checkpoint(d)
    # a tied checkpoint that also stores the head as a copy of the embedding is fine
    write(tmp_path, one, {**one_hf, LM_HEAD: one_hf[EMBED]},
          {**one.to_hf(), "tie_word_embeddings": True})
    w = load_checkpoint(d)
    assert w.lm_head is w.embed


def test_sharded_checkpoint_problems(tmp_path: Path, one: Qwen3Config,
                                     one_hf: dict[str, np.ndarray]) -> None:
    from safetensors.numpy import save_file

    names = sorted(one_hf)
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    save_file({n: one_hf[n] for n in names[:5]}, str(tmp_path / shards[0]))
    (tmp_path / "config.json").write_text(json.dumps(one.to_hf()))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {n: shards[i >= 5] for i, n in enumerate(names)}}))
    with pytest.raises(CheckpointFileError, match=rf"names shards .*{shards[1]}"):
        load_checkpoint(tmp_path)
    index.write_text("[]")
    with pytest.raises(CheckpointError, match=r"not a safetensors index"):
        load_checkpoint(tmp_path)
    index.unlink()
    save_file({n: one_hf[n] for n in names[5:]}, str(tmp_path / shards[1]))
    save_file({EMBED: one_hf[EMBED]}, str(tmp_path / "extra.safetensors"))
    with pytest.raises(CheckpointError, match=r"in both"):
        load_checkpoint(tmp_path)


# -- the engine's API ---------------------------------------------------------------------

def test_prompt_ids_are_checked(one_weights: Any) -> None:
    eng = Engine(one_weights, 8)
    with pytest.raises(ValueError, match=r"integer token ids"):
        eng.load_prompt([1.5, 2.7])               # was truncated to [1, 2]
    with pytest.raises(ValueError, match=r"flat sequence"):
        eng.load_prompt([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"empty prompt"):
        eng.load_prompt([])
    with pytest.raises(ValueError, match=r"got -1"):
        eng.load_prompt([1, -1])
    with pytest.raises(CapacityError, match=r"8 tokens does not fit 8"):
        eng.load_prompt(list(range(8)))
    with pytest.raises(CapacityError, match=r"max_seq"):
        Engine(one_weights, 0)


def test_decoding_past_capacity_is_refused_and_keeps_the_engine(one_weights: Any) -> None:
    """A step from the last position failed the device check and left the engine's
    buffers consumed (its tokens unreadable); now it is refused before it runs."""
    eng = Engine(one_weights, 4)
    eng.load_prompt([1, 2, 3], first_token=True)
    before = eng.token_ids().tolist()
    with pytest.raises(CapacityError, match=r"past the 4 positions"):
        eng.decode_step()
    assert eng.token_ids().tolist() == before and len(before) == 4


def test_graph_replays_past_capacity_are_refused(one_weights: Any) -> None:
    eng = Engine(one_weights, 4)
    eng.load_prompt([1, 2], first_token=True)
    g = eng.capture_decode()
    g.step().wait()
    with pytest.raises(CapacityError, match=r"from position 3"):
        g.step()
    assert len(g.token_ids()) == 4
    g.close()
    with pytest.raises(CapacityError):
        eng.decode_step()
    assert len(eng.token_ids()) == 4                 # the engine is usable after close


@pytest.mark.parametrize(("kw", "match"), [
    ({"temperature": -1.0}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"temperature": 1.0, "top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"),
    ({"top_k": -1}, "top_k"), ({"top_k": 2.5}, "top_k"), ({"seed": -1}, "seed")])
def test_sampling_settings_are_checked(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Sampling(**kw)


# -- generate.py --------------------------------------------------------------------------

RUN = ["--random-weights", "tiny", "--layers", "1", "--no-progress"]


@pytest.mark.parametrize(("args", "match"), [
    (["--prompt-len", "0"], "--prompt-len takes a number >= 1"),
    (["--prompt-len", "-3"], "--prompt-len"),
    (["--new-tokens", "0"], "--new-tokens"),
    (["--layers", "0"], "--layers"),
    (["--max-seq", "0"], "--max-seq"),
    (["--seed", "-1"], "--seed"),
    (["--copy-mib", "-1"], "--copy-mib"),
    (["--temperature", "-0.5"], "--temperature"),
    (["--top-p", "0"], "--top-p"),
    (["--top-p", "1.5"], "--top-p"),
    (["--top-k", "-1"], "--top-k"),
    (["--prompt-ids", "1,x"], "comma-separated integers"),
    (["--prompt-ids", ","], "names no token"),
    (["--prompt-ids", "1", "--prompt-len", "4"], "not allowed with"),
    (["--op-by-op", "--stream-every", "4"], "--op-by-op has no graph"),
])
def test_bad_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str],
                                        match: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        generate.main([*RUN, *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and match in err


def test_unknown_config_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        generate.main(["--random-weights", "qwen3-14b"])
    assert exit_.value.code == 2 and "known: qwen3-0.6b" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "match"), [
    (["--prompt-ids", "5,320"], "token id 320 is outside the vocabulary"),
    (["--prompt-len", "8", "--new-tokens", "8", "--max-seq", "10"], "--max-seq 10 cannot hold"),
])
def test_run_errors_are_one_line(args: list[str], match: str) -> None:
    with pytest.raises(SystemExit, match=rf"generate.py: error: .*{match}"):
        generate.main([*RUN, *args])


def test_checkpoint_errors_reach_the_cli_as_one_line(tmp_path: Path, one: Qwen3Config,
                                                     one_hf: dict[str, np.ndarray]) -> None:
    with pytest.raises(SystemExit, match=r"generate.py: error: .*config.json: no such file"):
        generate.main(["--checkpoint", str(tmp_path), "--no-progress"])
    d = write(tmp_path, one, one_hf)
    with pytest.raises(SystemExit, match=r"--layers 2: the checkpoint has 1"):
        generate.main(["--checkpoint", str(d), "--layers", "2", "--no-progress"])
    (d / "tokenizer.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"tokenizer.json: not a tokenizers file"):
        generate.main(["--checkpoint", str(d), "--prompt", "hi", "--no-progress"])
    (d / "tokenizer.json").unlink()
    (d / "model.safetensors").unlink()
    write(tmp_path, one, {k: v for k, v in one_hf.items() if k != FINAL})
    with pytest.raises(SystemExit, match=r"generate.py: error: .*no tensor model.norm.weight"):
        generate.main(["--checkpoint", str(d), "--no-progress"])


FINAL = "model.norm.weight"


def test_a_prompt_of_no_tokens(tmp_path: Path, one: Qwen3Config,
                               one_hf: dict[str, np.ndarray]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    d = write(tmp_path, one, one_hf)
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "a": 1},
                                                           unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(d / "tokenizer.json"))
    with pytest.raises(SystemExit, match=r"tokenizes to no token"):
        generate.main(["--checkpoint", str(d), "--prompt", "   ", "--no-progress"])
