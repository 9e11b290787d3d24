"""The row load the "gather" variants of the row-reduction examples share.

Why not `load_tile_like(x, z)`: a padded tile load of rows whose length is not known when
the kernel is compiled is assembled by tileiras (13.5, sm_90) as one guarded branch per
16-byte chunk, and in bf16 it moves the conversion to f32 into each branch, so a thread
waits for one chunk before it issues the load of the next: a row arrives in as many
memory round trips as a thread has chunks (4 at 4k columns over 4 warps). In f32 nothing
of the chunk is used inside its branch and the loads go out together. A `gather` of the
same elements is assembled as predicated 16-byte loads (`@!P LDG.E.128`), issued back to
back whatever the element type; each lane is still checked against the tensor's extents
(a lane outside reads the padding), so ragged rows stay exact.
"""

from __future__ import annotations

import cutile
from cutile.core import arange, block_id, gather


@cutile.device
def gather_rows(x, BM, BN):
    """This block's (BM, BN) tile of whole rows of x, zero past the row's end."""
    return gather(x, (block_id(0) * BM + arange(BM)[:, None], arange(BN)[None, :]))


@cutile.device
def gather_rows_neg_inf(x, BM, BN):
    """As `gather_rows`, -inf past the row's end (softmax: exp(-inf) = 0)."""
    return gather(x, (block_id(0) * BM + arange(BM)[:, None], arange(BN)[None, :]),
                  padding="neg_inf")



@cutile.device
def gather_vector(w, BN):
    """The (1, BN) tile of a weight vector, zero past its end, by a `gather`: in bf16 the
    padded `w.load_tile((BN,), (0,))` is the same chunk-by-chunk load as the row's (and
    tileiras placed it after the row's reductions: 4 round trips at 4k over 4 warps, once
    the reductions were done); the gather's loads go out together, wherever it is placed."""
    return gather(w, arange(BN))[None, :]


@cutile.device
def gather_row(x, i, BN):
    """Row `i` of x as a (1, BN) tile, zero past its end; a row `i` outside x (the one
    after a block's last, which the "rows" variants ask for ahead) is all padding, without
    a memory access."""
    return gather(x, (i + arange(1)[:, None], arange(BN)[None, :]))


@cutile.device
def gather_row_neg_inf(x, i, BN):
    """As `gather_row`, -inf past the row's end."""
    return gather(x, (i + arange(1)[:, None], arange(BN)[None, :]), padding="neg_inf")
