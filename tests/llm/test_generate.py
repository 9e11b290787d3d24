"""`examples/llm/generate.py` end to end on the tiny config: random weights, and a
checkpoint with a tokenizer (`tokenizers`) whose prompt text goes in and text comes out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llm import generate
from llm.weights import save_checkpoint


def test_generate_random_weights_reports_speed(capsys: pytest.CaptureFixture[str]) -> None:
    report = generate.main(["--random-weights", "tiny", "--prompt-len", "5", "--new-tokens",
                            "3", "--no-progress"])
    out = capsys.readouterr().out
    assert len(report["tokens"]) == 3
    assert all(0 <= t < 320 for t in report["tokens"])
    assert report["tok_s"] > 0 and report["roofline_tok_s"] > 0
    assert report["launches_per_step"] == 2 + 7 * 2 + 1
    assert "tok/s" in out and "roofline" in out and "ms/token" in out
    assert report["cutile_graph"] and "cutile.graph" in out


def test_generate_through_the_graph_and_op_by_op_give_the_same_tokens() -> None:
    args = ["--random-weights", "tiny", "--prompt-len", "7", "--new-tokens", "5",
            "--no-progress", "--seed", "3"]
    graphed = generate.main(args)
    plain = generate.main([*args, "--op-by-op"])
    assert graphed["cutile_graph"] and not plain["cutile_graph"]
    assert graphed["tokens"] == plain["tokens"] and len(plain["tokens"]) == 5
    assert graphed["launches_per_step"] == plain["launches_per_step"] == 2 + 7 * 2 + 1


def test_streaming_in_chunks_gives_the_tokens_of_waiting_for_every_step() -> None:
    """`--stream-every N` replays N steps back to back before each wait; the tokens are the
    same as with a wait after every step, whatever N and however the last chunk is cut."""
    args = ["--random-weights", "tiny", "--prompt-len", "4", "--new-tokens", "8",
            "--no-progress", "--seed", "5"]
    each = generate.main([*args, "--stream-every", "1"])
    for n in ("3", "7", "16"):
        chunked = generate.main([*args, "--stream-every", n])
        assert chunked["tokens"] == each["tokens"] and len(each["tokens"]) == 8
        assert chunked["stream_every"] == int(n)
        assert chunked["launches_per_step"] == each["launches_per_step"]
    with pytest.raises(SystemExit) as exit_:       # a usage error (argparse's exit 2)
        generate.main([*args, "--stream-every", "0"])
    assert exit_.value.code == 2


def test_generate_from_a_checkpoint_with_a_tokenizer(tmp_path: Path, tiny: Any,
                                                      tiny_hf: dict[str, Any],
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    save_checkpoint(tmp_path, tiny, tiny_hf)
    words = ["[UNK]", "the", "capital", "of", "france", "is", "paris", "a", "city"]
    vocab = {w: i for i, w in enumerate(words)}
    vocab.update({f"w{i}": i for i in range(len(words), tiny.vocab_size)})
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    report = generate.main(["--checkpoint", str(tmp_path), "--prompt",
                            "the capital of france is", "--new-tokens", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert len(report["tokens"]) == 2
    assert "prompt: 5 tokens" in out
    assert "text: " in out


def test_prompt_text_needs_a_tokenizer() -> None:
    with pytest.raises(SystemExit, match="tokenizer"):
        generate.main(["--random-weights", "tiny", "--prompt", "hello", "--no-progress"])
