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

