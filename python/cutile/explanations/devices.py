"""CT5036, CT5066, CT6113, CT6130, CT6131: devices and collectives (`cutile.device`,
`Tensor.to`, `cutile.distributed`)."""

TEXTS: dict[str, str] = {
    "CT5036": """
        A device ordinal names no device this process has. Devices are numbered from 0:
        the GPUs the process sees (`CUDA_VISIBLE_DEVICES` decides which, renumbered from
        0), or on the CPU interpreter the devices it models
        (`CUTILE_INTERPRETER_DEVICES`, 1 unless set). Ordinals go to `device=` of the
        tensor builders, `cutile.device(i)`, `cutile.set_device(i)` and `t.to(i)`.

        Example:

            x = api.zeros([1024], f32, device=2)      # a process that sees 2 GPUs
            # [CT5036] 2 is not a device ordinal: there are 2 GPUs visible to this
            # process, numbered 0 to 1

        Fix: pass an ordinal from 0 to `cutile.device_count() - 1`. Under `torchrun`,
        `cutile.distributed.init()` picks this process's GPU (`LOCAL_RANK`) for you.
    """,
    "CT5066": """
        A collective (`cutile.distributed.all_gather`, `all_reduce`, `broadcast`) was
        started while its stream was being captured into a CUDA Graph. NCCL's work is
        enqueued by torch.distributed, outside the record cutile keeps of a capture, so
        the graph could not own it or replay it.

        Example:

            def step(out, part):
                return cutile.distributed.all_gather(out, part)
            cutile.graph(step, out, part)
            # [CT5066] `all_gather` (op #7) cannot be captured into a CUDA Graph

        Fix: capture the kernels only, and run the collective between replays, on its
        own (it is ordered after the replay through the ledger like any op).
    """,
    "CT6113": """
        One launch (a kernel call, a raw kernel, or a collective) was given tensors of
        two devices. A launch runs on one device and reads and writes that device's
        memory; the device is the one its tensors are on (`t.device`).

        Example:

            x = api.from_numpy(xs, device=0)
            z = api.empty([n], f32, device=1).partition([1024])
            add(z, x, x)
            # [CT6113] `add` takes `z` on device 1 and `x` on device 0: one launch runs
            # on one device, and reads and writes only that device's memory

        Fix: copy the tensor to the other device first: `x.to(1)` returns a copy there
        (device work in the ledger, over the direct link where peer access is on), or
        make it there in the first place (`device=1`, `with cutile.device(1):`).
    """,
    "CT6130": """
        A collective across processes needs torch.distributed with the NCCL backend, and
        this process cannot have it: torch is not installed, this torch has no NCCL, or
        kernels run on the CPU interpreter (NCCL moves GPU memory). A program run as one
        process (`python script.py`) is a world of one, where collectives are local and
        need no torch; one started by `torchrun` with several processes is not.

        Example:

            $ torchrun --nproc-per-node=2 script.py      # on a machine without torch
            [CT6130] collectives across processes go through torch.distributed, and
            torch is not installed

        Fix: install a CUDA build of torch (`pip install torch`) on every host, and run
        on GPUs; or run one process.
    """,
    "CT6131": """
        A collective's arguments do not fit it. Collectives move whole buffers, so each
        tensor is a contiguous cutile tensor (a tensor, or a view of whole leading rows)
        on the GPU this process's group runs on; `all_gather(out, inp)` needs `out` of
        the ranks' inputs stacked along the first axis (`[world size * inp.shape[0],
        ...]`, same element type); `all_reduce` takes `sum`, `prod`, `min`, `max` or
        `avg` (floats) of an element type NCCL reduces (f16, bf16, f32, f64, i8, u8,
        i32, i64); `broadcast`'s `src` is a rank of the world.

        Example:

            out = api.empty([1000, 64], bf16)
            cutile.distributed.all_gather(out, part)    # 2 ranks, part: [512, 64]
            # [CT6131] `all_gather`: `out` is bf16 [1000, 64]; 2 rank(s) of `inp` bf16
            # [512, 64] need bf16 [1024, 64]

        Fix: allocate `out` as the message says; pass the tensor itself rather than a
        strided view; convert to an element type NCCL reduces.
    """,
}
