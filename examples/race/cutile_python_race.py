"""The same racy kernel in cuTile Python (the peer, which has no checker): it compiles, runs,
and its output changes from run to run. Needs a GPU, torch and `cuda.tile`.

    python examples/race/cutile_python_race.py
"""

import cuda.tile as ct
import torch


@ct.kernel
def permute_heads_racy(src, dst, H: ct.Constant[int], BM: ct.Constant[int],  # type: ignore[no-untyped-def]
                       D: ct.Constant[int]):
    bh = ct.bid(0)
    m = ct.bid(1)
    b = bh // H
    h = bh % H
    tile = ct.load(src, index=(b * H + (H - 1 - h), m, 0), shape=(1, BM, D))
    ct.store(dst, index=(b * H + m, h, 0), tile=tile)   # BUG: `m` and `h` swapped


def main(b: int = 2, h: int = 8, m: int = 512, d: int = 64, bm: int = 32, runs: int = 20) -> None:
    src = torch.randn(b * h, m, d, device="cuda")
    stream = torch.cuda.current_stream()
    grid = (b * h, m // bm, 1)
    outs = []
    for _ in range(runs):
        dst = torch.zeros_like(src)
        ct.launch(stream, grid, permute_heads_racy, (src, dst, h, bm, d))
        torch.cuda.synchronize()
        outs.append(dst)
    differ = [int((o != outs[0]).sum().item()) for o in outs[1:]]
    changed = sum(1 for n in differ if n)
    print(f"cuTile Python racy permute: {changed}/{runs - 1} runs differ from the first; "
          f"max {max(differ)} of {src.numel()} elements ({100 * max(differ) / src.numel():.1f}%)")


if __name__ == "__main__":
    main()
