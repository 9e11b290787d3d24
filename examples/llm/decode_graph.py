"""The engine's decode step captured once as a `cutile.graph` and replayed per token.

`Engine.decode_step()` allocates nothing and takes no host input (it reads tokens[pos] and
writes tokens[pos + 1] on the device), so one capture is every later step. The graph owns
everything the step touches, the weights, the KV caches, the token buffer, the position and
every intermediate, for its whole life: the engine's buffers cannot be used (CT5001) until
`close()` gives them back. Between replays, the generated tokens and the logits are read
through the graph (`g.read`, after the replays in flight), never through the engine.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

import cutile
from cutile.api import Tensor

# results of the captured function, in the order `cutile.Graph.read` numbers them
TOKENS, POS, LOGITS = 0, 1, 2


def _step(engine: Any) -> tuple[Tensor, Tensor, Tensor]:
    """One decode step (inside the capture each op's `sync()` returns at once), then the
    buffers the host reads between replays."""
    engine.decode_step()
    return engine.tokens.t, engine.pos.t, engine.logits.t


class DecodeGraph:
    """`engine`'s decode step as a graph: `step()` per token, `close()` at the end (or a
    `with` block). Dropped without `close()`, it gives the buffers back all the same and
    the engine takes the position its replays reached."""

    def __init__(self, engine: Any):
        from .model import GraphState

        self.engine = engine
        ops, start = engine.ops, engine.host_pos
        engine.check_room(1)
        try:
            self.graph = cutile.graph(_step, engine)
        finally:
            engine.ops, engine.host_pos = ops, start   # the capture ran nothing
        self.launches = self.graph.num_launches
        self.state = GraphState(start, self.launches)
        engine._graph, engine._graph_ref = self.state, weakref.ref(self)

    @property
    def start(self) -> int:
        return int(self.state.start)

    @property
    def replays(self) -> int:
        return int(self.state.replays)

    def step(self) -> cutile.Replay:
        """Enqueue one decode step; returns the replay (`.wait()` for it)."""
        # checked on the host: a replay past the last position fails its device check
        self.engine.check_room(1, self.start + self.replays)
        replay = self.graph.replay()
        self.state.replays += 1  # (a replay that failed to run did not advance the position)
        return replay

    def wait(self) -> None:
        self.graph.wait()

    def position(self) -> int:
        return int(self.graph.read(POS)[0])

    def token_ids(self) -> np.ndarray:
        """The sequence so far: the prompt and every generated token."""
        tokens = self.graph.read(TOKENS)
        return tokens[:self.position() + 1]

    def read_logits(self) -> np.ndarray:
        """Logits of the last step."""
        return self.graph.read(LOGITS)

    def close(self) -> None:
        """Wait for the replays and give the engine its buffers back (op-by-op steps and
        reads through the engine work again, from where the replays left off). A second
        close() does nothing."""
        if self.state.closed:
            return
        self.graph.into_inner()
        self.state.closed = True
        self.engine.ops += self.replays * self.launches
        self.engine.host_pos = self.start + self.replays
        self.engine._settle()

    def __enter__(self) -> DecodeGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
