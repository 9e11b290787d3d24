"""The paper's racy head permutation once more, with its store marked unsafe
(`store_unchecked`): now the checker accepts it, because unsafe code asks for no proof. The
interpreter's race detector still finds the race, on the first run, and names the two blocks
the checker names for the safe version (`python -m cutile check
examples/race/permute_heads_racy.py`).

    CUTILE_BACKEND=interpreter python examples/race/detect_unsafe_race.py

(The detector watches interpreted launches; without a GPU the interpreter is the default.)
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32
from cutile.runtime import driver


@cutile.entry
def permute_heads_unsafe(dst: Mut[Tensor[f32, [1, "BM", "D"]]], src: Tensor[f32, [-1, -1, "D"]],
                         H: Const[int], BM: Const[int], D: Const[int]):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    with cutile.unsafe():  # "trust me": no proof asked for, none given
        dst.store_unchecked(tile, (b * H + m, h, 0))  # BUG: `m` and `h` swapped


def main(b: int = 2, h: int = 2, m: int = 96, d: int = 16, bm: int = 32) -> cutile.RaceError:
    if driver.backend() != "interpreter":
        raise SystemExit("run with CUTILE_BACKEND=interpreter: the detector watches "
                         "interpreted launches")
    permute_heads_unsafe.check()  # accepted: the checker does not look inside `unsafe`
    src = api.from_numpy(np.random.default_rng(4).standard_normal((b * h, m, d), np.float32))
    dst = api.zeros([b * h, m, d], f32).partition([1, bm, d])
    try:
        with cutile.check_races():
            permute_heads_unsafe(dst, src, H=h).sync()
    except cutile.RaceError as err:
        print(err)
        return err
    raise SystemExit("the race was not detected: the detector is broken")


if __name__ == "__main__":
    main()
