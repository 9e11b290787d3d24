"""An embedding lookup, z[t] = table[ids[t]] for a (V, D) bf16 table: block (i, j) owns the
(BT, BD) tile of tokens [i*BT, (i+1)*BT) and columns [j*BD, (j+1)*BD), loads its ids and
gathers the rows with `gather(table, (rows, cols))` (row and column indices broadcast
together). Ids outside the vocabulary (negative, or V and past) read the padding, zero, like
a padding embedding; nothing reads outside the table. D is not a tile multiple: the lanes
past it read padding and their stores are dropped.

Every element is checked against numpy's take on random ids, some out of range.

    python examples/embedding.py
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, arange, bf16, block_id, gather, i32


@cutile.entry
def embedding(z: Mut[Tensor[bf16, ["BT", "BD"]]], table: Tensor[bf16, [-1, -1]],
              ids: Tensor[i32, [-1]], BT: Const[int], BD: Const[int]):
    rows = ids.load_tile((BT,), (block_id(0),)).reshape((BT, 1))
    cols = (block_id(1) * BD + arange(BD, i32)).reshape((1, BD))
    z.store(gather(table, (rows, cols)))


def main(tokens: int = 1000, vocab: int = 500, d: int = 300,
         tiles: tuple[int, int] = (32, 128)) -> None:
    rng = np.random.default_rng(24)
    table = rng.standard_normal((vocab, d)).astype(ml_dtypes.bfloat16)
    ids = rng.integers(-20, vocab + 20, tokens).astype(np.int32)   # some out of range
    bt, bd = tiles
    z = api.full([tokens, d], np.nan, bf16).partition([bt, bd])
    z, _, _ = embedding(z, api.from_numpy(table), api.from_numpy(ids)).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    inside = (ids >= 0) & (ids < vocab)
    ref = np.where(inside[:, None], table.astype(np.float64)[np.clip(ids, 0, vocab - 1)], 0.0)
    np.testing.assert_array_equal(out, ref)             # a copy: exact, NaN would fail
    print(f"embedding: {tokens} tokens from a {vocab}x{d} table in tiles of {bt}x{bd}, "
          f"{int((~inside).sum())} ids out of range read zero: exact")


if __name__ == "__main__":
    main()
