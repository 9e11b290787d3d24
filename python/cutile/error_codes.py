"""Every error code a user can see, with a one-line summary: the Rust crates' (kernel rules
CT1xxx/CT2xxx/CT4xxx, host rules CT5001-CT5009, CT5040-CT5041, CT5060-CT5061 and
CT6001-CT6004) and Python's own (the frontend, the lowering, argument binding, the
toolchain). `python -m cutile explain CODE` prints the summary and the long explanation
(`cutile.explanations`; for the Rust codes, in a source checkout, the page in
docs/errors/)."""

from __future__ import annotations

from pathlib import Path

PYTHON_CODES: dict[str, str] = {
    # frontend (source the compiler does not accept)
    "CT0001": "syntax a kernel cannot use (statement, expression, target, with)",
    "CT0002": "a name that is not defined in the kernel's scope",
    "CT0003": "a missing, plain-Python or unknown parameter annotation, or a default value",
    "CT0004": "the kernel's source text cannot be read",
    "CT0005": "a tensor shape names something that is not a `Const[int]` parameter",
    "CT0006": "a global of a type kernels cannot use, or an operation used as a value",
    "CT0007": "a call of host code (a Python function, numpy, math) or of a kernel",
    "CT0010": "a DSL operation or device function called outside a kernel",
    "CT0011": "a kernel nested too deeply (expressions or blocks)",
    "CT0012": "an integer literal that does not fit in 64 bits",
    # types and shapes (lowering, once Const values are known)
    "CT3001": "an operand that is not a tile or a number",
    "CT3002": "shapes that do not broadcast",
    "CT3003": "a constant expression that cannot be evaluated",
    "CT3004": "`@` / `matmul` operands that cannot be multiplied (shapes, rank, dtype)",
    "CT3005": "an operator not defined for the element type",
    "CT3006": "a condition that is not a scalar",
    "CT3010": "an entry parameter kind or scalar type that cannot be passed",
    "CT3011": "no value for a `Const`",
    "CT3012": "an entry returns a value",
    "CT3013": "unpacking that does not fit",
    "CT3014": "an assertion that is always false",
    "CT3015": "a variable with different types on different paths",
    "CT3016": "non-integer loop bounds",
    "CT3017": "a name used where it is not defined (e.g. only inside a loop)",
    "CT3018": "indexing something that is not a tuple, or out of range",
    "CT3019": "device function calls nested more than 32 deep",
    "CT3020": "device function called with the wrong arguments",
    "CT3021": "a partitioned output of rank above 3",
    "CT3022": "a tile whose rank differs from the tensor's",
    "CT3023": "a tile dimension that is not a power of two",
    "CT3024": "a tile of more than 2^24 elements (Tile IR's limit)",
    "CT3030": "an operation the compiler does not lower yet",
    "CT3031": "an unknown method for this kind of value",
    "CT3032": "an unknown attribute",
    "CT3034": "a value that must be a compile-time integer or shape",
    "CT3035": "a value that must be a dtype",
    "CT3036": "a tile index of the wrong rank or type",
    "CT3037": "a negative constant tile index",
    "CT3038": "an unknown padding mode",
    "CT3039": "wrong arguments to a DSL operation",
    "CT3040": "a grid axis other than 0, 1, 2",
    "CT3041": "`num_tiles` arguments that do not fit the tensor",
    "CT3042": "`load_tile_like` arguments that are not tensors / a `Mut` position",
    "CT3044": "storing a tile of another shape",
    "CT3045": "sub-partition shape that does not divide the tile",
    "CT3046": "a reduction axis (or an `expand_dims` axis) out of range",
    "CT3047": "`mma` operand shapes or types that do not line up",
    "CT3048": "a reshape that changes the element count",
    "CT3049": "a permutation that is not one",
    "CT3050": "a mapped-partition group size below 1",
    "CT3060": "a load or store hint out of range (`latency` 1-10, `allow_tma` a bool), or a "
              "`ByTarget` that names no architecture or gives no value",
    "CT3061": "an unknown rounding mode, or a fast math mode on a type other than f32",
    "CT3053": "an integer raised to a negative constant power",
    "CT3054": "`.item()` of a tile with more than one element",
    "CT3080": "a gather, scatter or atomic whose tensor, indices or element type do not fit",
    "CT3081": "an unknown memory order or scope of an atomic operation",
    "CT3082": "a pointer operation whose pointers, offsets, mask or padding do not fit, or a "
              "pointer used as a number",
    "CT3083": "an `assume` hint on a value it cannot apply to, or with a divisor or bounds "
              "that are not compile-time ints that fit",
    # scans, custom reductions, ranges and pieces of tiles
    "CT3070": "an `arange` whose length is not a power of two, whose step is 0, or whose "
              "values the dtype cannot hold",
    "CT3071": "a tile slice or index the compiler cannot express (runtime bound, "
              "non-power-of-two length, backward step, out of range)",
    "CT3072": "tiles `cat` cannot join (not tiles, shapes that differ off the axis, sizes "
              "that do not pair into powers of two)",
    "CT3073": "an `extract` whose sub-tile shape does not divide the tile, or whose index "
              "is out of range or not an integer",
    "CT3074": "a `reduce` combiner that is not a straight-line `@cutile.device` function of "
              "two scalars returning the element type, or an identity that is not a number",
    # element types and bits
    "CT3090": "two element types with no implicit common type (f8 with another type, u64 "
              "with a signed integer)",
    "CT3091": "a `bitcast` between widths, or `pack_i4` / `unpack_i4` of values they do not "
              "take",
    # host ownership raised in Python
    "CT5010": "a partition tile shape of the wrong rank or below 1",
    "CT5011": "partitioning a tensor of rank above 3",
    "CT5012": "`persistent(num_blocks)` below 1",
    "CT5013": "partitioning a tensor whose layout puts several elements at one address",
    "CT5020": "running an operation a second time",
    # CUDA Graphs (`cutile.graph`)
    "CT5062": "a CUDA Graph used after `into_inner()` gave its tensors back",
    "CT5063": "allocating a tensor, or writing one from the host, during a graph capture",
    "CT5064": "a replay input that does not fit the graph's input (count, kind, shape, "
              "dtype, layout)",
    "CT5065": "`cutile.graph` of something it cannot capture (not an op or function, an op "
              "that ran, a capture in a capture, no op started, an op of another device)",
    # host tensors (`cutile.api`, TensorError)
    "CT5030": "a tensor shape that is not a sequence of non-negative integers",
    "CT5031": "an element type cutile does not have (unknown name or numpy dtype)",
    "CT5032": "a fill value or `arange` bound the element type cannot hold",
    "CT5033": "a tensor larger than the memory that can be allocated",
    "CT5034": "a reshape to a different number of elements, or of a strided tensor",
    "CT5035": "`Tensor.permute` axes that are not an order of the tensor's axes",
    "CT5037": "a tensor index `t[...]` that names no view (too many indices, an int out of "
              "range, a step below 1, neither int nor slice)",
    # devices
    "CT5036": "a device ordinal that names no device of the process (`device=`, "
              "`cutile.device(i)`, `cutile.set_device(i)`, `t.to(i)`)",
    "CT5066": "a collective started on a stream a CUDA Graph capture records",
    # tensors shared with other libraries (`cutile.from_dlpack`, `__dlpack__`; InteropError)
    "CT5042": "an object that is no tensor cutile can import (no DLPack or array interface), "
              "or a producer that refused to export it",
    "CT5043": "another library's tensor on a device the backend cannot use (host memory on "
              "the GPU, a CUDA tensor on another GPU or on the interpreter)",
    "CT5044": "another library's tensor in a layout cutile cannot use (negative strides, "
              "misaligned data; for an exclusive import, two elements at one address)",
    "CT5045": "an export (`__dlpack__`, `__cuda_array_interface__`) asked for a device, "
              "copy, stream or type it cannot give",
    "CT5046": "an exclusive import of memory its producer marked read-only or copied",
    "CT5047": "an import of bytes that another live import or export already views, where "
              "one of them is exclusive",
    # launch arguments (Python binder)
    "CT6101": "an argument of the wrong kind (Partition for `Mut`, Tensor, scalar)",
    "CT6102": "an element type or scalar type that does not match the parameter",
    "CT6103": "a `Const` that contradicts another source, is below 1, or exceeds 32 bits",
    "CT6104": "a missing, duplicate or unknown argument",
    "CT6105": "a tensor whose extent differs from a static dimension",
    "CT6106": "a partition whose tile rank differs from the declaration",
    "CT6107": "a kernel with no `Mut` output (no grid)",
    "CT6108": "mapped partitions asking for different block counts",
    "CT6109": "a launch grid past CUDA's limits (x < 2^31, y and z <= 65,535)",
    "CT6110": "a `Ptr` parameter given something other than a Tensor",
    "CT6111": "a tensor extent of 2^31 elements or more on one axis",
    "CT6112": "another library's tensor passed for a parameter the kernel writes (`Mut`, "
              "`Atomic`, `Ptr`): it needs an explicit exclusive import",
    "CT6113": "tensors of two devices in one launch or collective (one runs on one device)",
    "CT6120": "a raw CUDA C++ kernel launched on the CPU interpreter (it needs a GPU)",
    "CT6121": "a raw kernel call's grid, block or shared memory that cannot be launched",
    "CT6122": "a raw kernel declaration that cannot be used (params, C types, options, link)",
    "CT6123": "raw kernel parameters declared unlike the C++ signature (count or size)",
    "CT6130": "collectives across processes without torch.distributed and NCCL (torch "
              "missing, no NCCL, or the interpreter)",
    "CT6131": "collective arguments that do not fit (not contiguous cutile tensors, shapes "
              "or element types that disagree, a reduction or rank there is not, another "
              "device than the process group's)",
    "CT6200": "a launch predicate from the checker is false for these arguments",
    "CT6201": "a launch predicate that cannot be evaluated",
    "CT6900": "a CUDA driver error",
    "CT6901": "a CUDA driver call failed",
    "CT6902": "CUTILE_BACKEND=gpu without a usable driver",
    "CT6903": "a kernel faulted on the GPU (failed device check, bad address); context lost",
    "CT6904": "CUTILE_INTERPRET has a value other than `check` or empty",
    "CT6910": "the interpreter stopped the kernel (bad access or failed assert)",
    "CT6911": "race detector: two tile blocks write one element (plain or plain + atomic)",
    "CT6912": "race detector: one block reads an element another block writes",
    "CT6913": "race detector: an access outside its tensor argument or partition index space",
    # toolchain
    "CT7001": "no tileiras found",
    "CT7002": "CUTILE_TILEIRAS does not name an executable",
    "CT7003": "tileiras could not report its version(s)",
    "CT7004": "tileiras rejected the kernel or wrote nothing",
    "CT7005": "tileiras timed out",
    "CT7006": "no tileirdisasm next to tileiras",
    "CT7007": "the assembler does not read the bytecode version a kernel needs (PDL: 13.4)",
    "CT7010": "NVRTC or nvJitLink cannot be loaded (raw kernels need them)",
    "CT7011": "NVRTC rejected a raw kernel's CUDA C++ or its options",
    "CT7012": "no `__global__` function of a raw kernel's name in its program",
    "CT7013": "nvJitLink could not link a raw kernel with the device code it calls",
    # configuration: environment variables, the command line, the cubin cache
    "CT8001": "CUTILE_BACKEND has a value other than `gpu`, `interpreter` (`cpu`) or empty",
    "CT8002": "CUTILE_DEVICE is not the ordinal of a device the process has",
    "CT8003": "CUTILE_CACHE_MAX is not a size (e.g. `500M`, `2G`)",
    "CT8004": "CUTILE_LOG is not `debug`, `info` or `warning` (a warning; logging is unchanged)",
    "CT8005": "CUTILE_DUMP names a stage other than kast, facts, ir, bytecode, cubin, sass, all",
    "CT8006": "CUTILE_TILEIRAS_TIMEOUT is not a number of seconds above 0",
    "CT8007": "CUTILE_STREAMS is not a stream count from 1 to 64",
    "CT8008": "CUTILE_PDL is not `0` or `1` (or their spellings)",
    "CT8009": "CUTILE_INTERPRETER_DEVICES is not a device count from 1 to 16",
    "CT8010": "a file named on the command line does not exist or is not a file",
    "CT8011": "a file named on the command line raised an error when imported",
    "CT8012": "`-D` that is not NAME=VALUE with an integer, float, True or False",
    "CT8013": "`-D` naming a Const the kernel does not have, twice, or missing one it needs",
    "CT8014": "the `-o` output file cannot be written",
    "CT8015": "no kernel of that name in the file",
    "CT8016": "`explain` of a code that does not exist",
    "CT8020": "a kernel hint (num_ctas, occupancy, num_worker_warps, opt_level, pdl) out of "
              "range",
    "CT8021": "an autotune search space or `cutile.Config` that cannot be used as written",
    "CT8022": "no config of an autotune search space passes the checker, binds and compiles",
    "CT8023": "CUTILE_AUTOTUNE has a value other than `1`, `0` or `retune` (or their spellings)",
    "CT8901": "the cubin cache directory cannot be written: a warning; kernels compile without it",
    "CT8902": "an op dropped before anything ran it: a warning; its tensors stay unusable",
    # internal
    "CT9001": "an internal error in cutile (please report it)",
    "CT9002": "an internal error in the lowering (please report it)",
}


def all_codes() -> dict[str, str]:
    """Every code with its summary, Rust's and Python's, sorted."""
    from . import _native

    codes = dict(_native.list_all_error_codes())
    codes.update(PYTHON_CODES)
    return dict(sorted(codes.items()))


def explain(code: str) -> str | None:
    """The summary of `code` and its long explanation with an example: Python's own codes
    from `cutile.explanations`, the Rust checker's from their page in docs/errors/ (in a
    source checkout)."""
    from .explanations import long_text

    code = code.upper()
    summary = all_codes().get(code)
    if summary is None:
        return None
    text = f"{code}: {summary}"
    long = long_text(code)
    page = Path(__file__).resolve().parents[2] / "docs" / "errors" / f"{code}.md"
    if long is not None:
        text += "\n\n" + long
    elif page.is_file():
        text += "\n\n" + page.read_text()
    return text
