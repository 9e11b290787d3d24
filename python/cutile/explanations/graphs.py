"""CT5062-CT5065: CUDA Graphs (`cutile.graph`), raised in Python (`BorrowError`)."""

TEXTS: dict[str, str] = {
    "CT5062": """
        A graph was used after `g.into_inner()` gave its tensors back. A graph owns every
        tensor it touches for its whole life; `into_inner()` ends that life (it waits for
        the replays in flight and returns the tensors), so nothing can replay or read
        through it afterwards: the tensors may already be in other hands.

        Example:

            g = cutile.graph(step, z, x)
            g.replay()
            z, x = g.into_inner()
            g.replay()
            # [CT5062] the graph of `step` gave its tensors back (`into_inner()`); it cannot replay

        Fix: keep the graph while you replay it, and call `into_inner()` (or drop it)
        last; capture a new graph to run the work again on the returned tensors.
    """,
    "CT5063": """
        A tensor was allocated (or written from the host) while a CUDA Graph was being
        captured. A capture records work on the tensors the graph was given and runs none
        of it; memory made during the capture would belong to no one, and bytes written
        from the host now would not be written at replay.

        Example:

            def step(z, x):
                tmp = api.zeros([1024], f32)        # inside the capture
                ...
            cutile.graph(step, z, x)
            # [CT5063] cannot allocate 4096 bytes while a CUDA Graph is being captured

        Fix: allocate every tensor the graph uses, intermediates too, before
        `cutile.graph(...)` and pass them in; new input values go in at replay
        (`g.replay(new_x)`).
    """,
    "CT5064": """
        `g.replay(...)` got an input that does not fit the graph's input at that position:
        more inputs than the graph has, something that is not a cutile tensor or a numpy
        array, another shape or element type, or a graph input that is not one contiguous
        tensor (a copy-in writes its bytes whole). The graph's inputs are the arguments
        `cutile.graph(fn, *args)` was given, in order (`None` keeps one as it is).

        Example:

            g = cutile.graph(step, z, x)            # x: f32 [1024]
            g.replay(None, np.zeros(512, np.float32))
            # [CT5064] replay input 1 has shape [512]; the graph's input `x` has shape [1024]

        Fix: pass arrays or tensors of the input's shape and element type, in the
        order of the arguments; `None` for one that keeps its contents.
    """,
    "CT5065": """
        `cutile.graph` got something it cannot capture: neither a `DeviceOp` nor a function,
        an op that already ran (an op runs once), a capture started inside another capture
        on the same thread, a function that started no op (there is nothing to
        replay), or an op on another device than the capture's (a graph records the work
        of one device; that op would run now and never at a replay). A graph is built
        from work that has not run yet.

        Example:

            op = add(z, x, y)
            op.sync()
            cutile.graph(op)
            # [CT5065] `add` (op #3) already ran; a graph captures an op that has not run

        Fix: capture a fresh op (`cutile.graph(add(z, x, y))`) or a function that makes
        its ops from the tensors it is given (`cutile.graph(step, z, x, y)`).
    """,
}
