#!/usr/bin/env python3
"""Write docs/errors/CTxxxx.md, one page per kernel-rule code, from the corpus.

Each page shows a corpus kernel that fails with the code and its blessed `.stderr`, so the
example is a test (`cargo test -p cutile-check --test corpus`). Host and launch codes get
pages from HOST below. Run after blessing: `python gen_error_docs.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
OUT = REPO / "docs" / "errors"
CODES_RS = REPO / "rust" / "cutile-diag" / "src" / "codes.rs"

HOST = {
    "CT5001": (
        "reg.move_in(1, 'add', [(z, True)])\nreg.check_live(z, 'read it')",
        "the tensor was moved into `add` (op #1), which has not completed",
        "Use the tensors that `.sync()` (or `await`) returns. A CUDA Graph holds the "
        "tensors it was given, and guards the memory its replays read or write: no other "
        "handle (a view kept from the capture, one made before it) may write it (a "
        "mutable launch argument, `partition`) until the graph gives its tensors back "
        "(`g.into_inner()`, or when it is dropped); read results with `g.read(i)`.",
    ),
    "CT5002": (
        "p = reg.consume(t, 'partition', True)\nreg.check_live(t, 'read it')",
        "the tensor was consumed by `partition`",
        "Use the partition that was returned.",
    ),
    "CT5003": (
        "reg.release_handle(h)\nreg.check_live(h, 'read it')",
        "tensor handle was released",
        "Keep a reference to the tensor while it is used.",
    ),
    "CT5004": (
        "view = reg.new_handle(s, 0, [16], [1], 4)\nreg.consume(t, 'partition', True)",
        "the tensor's storage has 1 other live view",
        "Drop the other views, or copy the tensor, before partitioning.",
    ),
    "CT5005": (
        "reg.move_in(1, 'k', [(a, True), (a, False)])",
        "the same tensor is passed to `k` (op #1) as arguments 0 and 1, and one of them is "
        "mutable",
        "Pass distinct tensors.",
    ),
    "CT5006": (
        "whole = reg.new_handle(s, 0, [256], [1], 4)\n"
        "half = reg.new_handle(s, 512, [128], [1], 4)\n"
        "reg.move_in(1, 'k', [(whole, False), (half, True)])",
        "arguments 0 and 1 of `k` (op #1) may overlap in memory, and one of them is mutable",
        "Pass views that share no element (interleaved strided views are fine).",
    ),
    "CT5007": (
        "reg.check_live(12345, 'read it')",
        "unknown tensor handle 12345",
        "A bug in the caller: handles come from `new_handle`.",
    ),
    "CT5008": (
        "led.acquire(1, [(7, 0, 100, False)])\nled.acquire(2, [(7, 50, 60, True)])",
        "bytes 50..60 of storage 7 are in use by pending operation 1",
        "Wait for the pending operation before the access.",
    ),
    "CT5009": (
        "add(z, x, y)  # builds the op; nothing runs it, and it is dropped\nz.to_numpy()",
        "cannot read: `z` was moved into `add` (op #1), which was dropped without running",
        "Calling a kernel builds an op; `.sync()` (or `await`) runs it. Keep the op and run "
        "it, then use the tensors it returns: `z, x, y = add(z, x, y).sync()`. Python also "
        "warns (`cutile.OpNeverRunWarning`) where the op was dropped, naming the line that "
        "made it.",
    ),
    "CT5060": (
        "g = cutile.graph(step, z, x)   # inside `step`, while capturing:\n"
        "z.unpartition().to_numpy()      # reads what a captured op writes",
        "cannot read bytes 0..4096 of storage 3: operation 9 was captured into a CUDA Graph "
        "that has not run",
        "A capture records work without running it. Replay the graph and read its results "
        "through it (`g.read(i)`, `g.into_inner()`); an op outside the capture, or on another "
        "thread, cannot use the captured tensors until the capture ends; and finish work "
        "pending on other streams before capturing (`cutile.synchronize()`).",
    ),
    "CT5061": (
        "s = cutile.Stream()\ns.close()\nadd(z, x, y).sync_on(s)",
        "stream 4 was closed: no work can be enqueued on it",
        "Use a stream that is still open, or the pool (outside `cutile.stream()`).",
    ),
    "CT5040": (
        "x = cutile.from_dlpack(torch_x)  # shared: cutile only reads it\n"
        "x.partition([128])",
        "cannot `partition`: the tensor is memory of another library imported shared "
        "(`cutile.from_dlpack`), which cutile only reads",
        "Write into a cutile tensor (`api.empty(...)`) and export it (`torch.from_dlpack(t)`), "
        "or, if nothing else reads or writes the memory while cutile holds it, import it with "
        "`cutile.unsafe.from_dlpack_exclusive(obj)`. The same code refuses a shared import "
        "passed to a parameter the kernel writes (`Atomic`, `Ptr`). See docs/interop.md.",
    ),
    "CT5041": (
        "t = api.zeros([1024], f32)\n"
        "view = torch.from_dlpack(t)  # torch holds the export\n"
        "t.partition([128])",
        "cannot `partition`: the tensor's memory is exported to another library (1 live "
        "export: DLPack or `__cuda_array_interface__`), which may still read it",
        "Drop the other library's tensor first (`del view`: its DLPack deleter ends the "
        "export; keep `view.clone()` if its values are still needed). A "
        "`__cuda_array_interface__` export ends when the cutile tensor object dies. "
        "See docs/interop.md.",
    ),
    "CT6001": (
        "validate_launch('add', (4, 1, 1), [('z', [1024], [128], [128])])",
        "`add` launched with grid [4, 1, 1], but partition `z` has tile grid [8, 1, 1]",
        "Omit the grid to infer it from the partitions.",
    ),
    "CT6002": (
        "validate_launch('add', (0, 0, 0), [('z', [1024], [64], [128])])",
        "`add` declares `z` with tile shape [128], but the partition has tile shape [64]",
        "Partition with the declared tile shape.",
    ),
    "CT6003": (
        "validate_launch('k', (0, 0, 0),\n"
        "                [('z', [1024], [128], [128]), ('w', [512], [128], [128])])",
        "partition `z` has tile grid [8, 1, 1] but `w` has [4, 1, 1]",
        "Every output partition of one launch has the same tile grid.",
    ),
    "CT6004": (
        "validate_launch('k', (0, 0, 0), [('z', [8, 8], [8], [8])])",
        "ranks must match and be 1 to 3",
        "Give one tile extent per tensor axis, rank 1 to 3.",
    ),
}


# A second example for codes with two forms of message.
SECOND = {"CT2001": ("err_store_head_permute_race.py",)}
SECOND_INTRO = {
    "CT2001": (
        "When no symbolic argument decides the map (here digits `b // H`, `b % H` of a block id "
        "that the index does not keep apart), the checker evaluates it on small launches "
        "(`Const` values and grid extents from 1 up) and reports the first two blocks that "
        "store one tile, with the launch:"
    ),
}


def codes() -> list[tuple[str, str]]:
    return re.findall(r'[khl]\(\s*"(CT\d{4})",\s*"(.*?)",?\s*\)', CODES_RS.read_text())


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    index = [
        "# Error codes",
        "",
        "Generated by `rust/cutile-check/tests/corpus/gen_error_docs.py`; "
        "each kernel example is a corpus test.",
        "",
        "| code | meaning |",
        "| --- | --- |",
    ]
    for code, summary in codes():
        index.append(f"| [{code}]({code}.md) | {summary} |")
        page = [f"# {code}: {summary}", ""]
        if code in HOST:
            snippet, msg, fix = HOST[code]
            kind = "BorrowError" if code.startswith("CT5") else "LaunchError"
            page += [
                f"Raised as `cutile.errors.{kind}` by the host runtime (`cutile._native`).",
                "",
                "```python",
                snippet,
                "```",
                "",
                f"raises `{kind}`: `[{code}] ... {msg}`",
                "",
                f"**Fix:** {fix}",
                "",
            ]
        else:
            examples = sorted(
                p
                for p in HERE.glob("err_*.py")
                if re.search(rf"^# expect: {code}$", p.read_text(), re.M)
            )
            if not examples:
                continue
            ex = examples[0]
            text = ex.read_text()
            why = text.splitlines()[1].lstrip("# ")
            page += [
                f"{why[0].upper() + why[1:]}.",
                "",
                f"Example (`rust/cutile-check/tests/corpus/{ex.name}`):",
                "",
                "```python",
                text.split("\n", 2)[2].rstrip(),
                "```",
                "",
                "The checker reports:",
                "",
                "```text",
                ex.with_suffix(".stderr").read_text().rstrip(),
                "```",
                "",
            ]
            for extra in SECOND.get(code, ()):
                ex2 = HERE / extra
                text2 = ex2.read_text()
                page += [
                    SECOND_INTRO[code],
                    "",
                    f"Example (`rust/cutile-check/tests/corpus/{ex2.name}`):",
                    "",
                    "```python",
                    text2.split("\n", 1)[1].rstrip(),
                    "```",
                    "",
                    "```text",
                    ex2.with_suffix(".stderr").read_text().rstrip(),
                    "```",
                    "",
                ]
            if len(examples) > 1:
                page += ["More examples: " + ", ".join(f"`{p.name}`" for p in examples[1:]), ""]
        (OUT / f"{code}.md").write_text("\n".join(page))
    (OUT / "README.md").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
