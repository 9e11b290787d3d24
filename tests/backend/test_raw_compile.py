"""Raw CUDA C++ kernels compile on the host, without a GPU: NVRTC builds an sm_90 cubin (or
LTO-IR that nvJitLink links with other device code), the declared parameters are checked
against the kernel's parameter table in the cubin, every failure is a typed CompileError
with the tool's log, and builds land in the cubin cache keyed by everything they depend
on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import cutile
from cutile import dump, unsafe
from cutile.backend import nvrtc
from cutile.backend.cache import MEMORY
from cutile.backend.cubin_abi import ParamSlot, kernel_params
from cutile.backend.disk_cache import DiskCache
from cutile.backend.raw_build import build
from cutile.core import f32, i32
from cutile.runtime.raw_args import natural_layout

pytestmark = pytest.mark.nvrtc

AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
AXPY_PARAMS = [unsafe.scalar("a", "float"), unsafe.read("x", f32), unsafe.write("y", f32),
               unsafe.scalar("n", "int")]

CALLS_HELPER = r"""
extern "C" __device__ float shifted(float v, float by);
extern "C" __global__ void shift(float* y, float by, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = shifted(y[i], by);
}
"""
HELPER = r"""
extern "C" __device__ float shifted(float v, float by) { return v * 0.5f + by; }
"""
SHIFT_PARAMS = [unsafe.write("y", f32), unsafe.scalar("by", "float"), unsafe.scalar("n", "int")]


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(where))
    MEMORY.clear()
    return where


def test_a_raw_kernel_compiles_to_an_sm90_cubin_without_a_gpu() -> None:
    k = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, block=256)
    binary = k.compile("sm_90")
    assert binary.cubin[:4] == b"\x7fELF" and binary.symbol == "axpy"
    assert binary.arch == "sm_90" and binary.from_cache == ""
    # the compiler's parameter table: float, two pointers, int
    assert kernel_params(binary.cubin, "axpy") == [
        ParamSlot(0, 0, 4), ParamSlot(1, 8, 8), ParamSlot(2, 16, 8), ParamSlot(3, 24, 4)]
    text = dump.sass(binary.cubin)
    if text is None:
        pytest.skip("cuobjdump is not installed")
    assert "axpy" in text and "FFMA" in text  # a real kernel: a * x + y is one fused op


def test_cpp_kernels_are_named_as_cpp_names_them() -> None:
    src = r"""
    namespace ops {
    __global__ void fill(int* y, int v, int n) { if ((int)threadIdx.x < n) y[threadIdx.x] = v; }
    }
    template <typename T> __global__ void scale(T* y, T by, long long n) {
        long long i = threadIdx.x; if (i < n) y[i] *= by; }
    """
    fill = unsafe.raw_kernel(src, "ops::fill", [unsafe.write("y", i32),
                                                 unsafe.scalar("v", "int"),
                                                 unsafe.scalar("n", "int")]).compile()
    scale = unsafe.raw_kernel(src, "scale<double>", [unsafe.write("y", "f64"),
                                                      unsafe.scalar("by", "double"),
                                                      unsafe.scalar("n", "int64_t")]).compile()
    assert fill.symbol == "_ZN3ops4fillEPiii"
    assert scale.symbol.startswith("_Z5scaleIdEv")  # the template instance NVRTC made
    assert [s.size for s in kernel_params(scale.cubin, scale.symbol) or []] == [8, 8, 8]


def test_the_parameter_table_agrees_with_cuobjdump() -> None:
    src = r"""extern "C" __global__ void mixed(char c, double* p, short s, long long n,
                                              bool b, float f) {}"""
    binary = unsafe.raw_kernel(src, "mixed", [
        unsafe.scalar("c", "int8_t"), unsafe.write("p", "f64"), unsafe.scalar("s", "short"),
        unsafe.scalar("n", "long long"), unsafe.scalar("b", "bool"),
        unsafe.scalar("f", "float")]).compile()
    slots = kernel_params(binary.cubin, "mixed")
    assert slots is not None
    tool = dump.find_cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump is not installed")
    cubin = Path(binary.key[:16] + ".cubin")
    listing = _cuobjdump_elf(tool, binary.cubin, cubin)
    seen = sorted((int(o, 16), int(off, 16), int(sz, 16)) for o, off, sz in re.findall(
        r"Ordinal\s*:\s*(0x[0-9a-f]+)\s+Offset\s*:\s*(0x[0-9a-f]+)\s+Size\s*:\s*(0x[0-9a-f]+)",
        listing))
    assert seen == [(s.ordinal, s.offset, s.size) for s in slots]
    assert [s.size for s in slots] == [1, 8, 2, 8, 1, 4]


def _cuobjdump_elf(tool: Path, cubin: bytes, name: Path) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(cubin)
        out = subprocess.run([str(tool), "-elf", str(path)], capture_output=True, text=True,
                             timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_layout_without_a_table_aligns_each_parameter_to_its_size() -> None:
    layout = natural_layout([unsafe.scalar("c", "int8_t"), unsafe.read("p"),
                             unsafe.scalar("s", "short"), unsafe.scalar("f", "float")])
    assert layout.offsets == (0, 8, 16, 20) and layout.size == 24
    assert kernel_params(b"not an elf", "k") is None


# -- errors ------------------------------------------------------------------------------


def test_a_cpp_error_is_a_compile_error_with_nvrtcs_log() -> None:
    bad = 'extern "C" __global__ void k(float* y) {\n    y[0] = undefined_name;\n}\n'
    with pytest.raises(cutile.CompileError) as err:
        unsafe.raw_kernel(bad, "k", [unsafe.write("y", f32)]).compile()
    assert err.value.code == "CT7011"
    assert "raw_kernel.cu(2): error" in err.value.log  # the program's own line
    assert err.value.location == f"{__file__}:{_line_of('unsafe.raw_kernel(bad')}"
    assert "undefined_name" in err.value.log and "undefined_name" in str(err.value)


def _line_of(text: str) -> int:
    """The line of this file where `text` first appears (after its definition here)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


def test_a_name_that_is_no_kernel_is_ct7012() -> None:
    src = AXPY + '__device__ float helper(float v) { return v; }\n'
    for name in ("axpby", "helper"):
        with pytest.raises(cutile.CompileError) as err:
            unsafe.raw_kernel(src, name, AXPY_PARAMS).compile()
        assert err.value.code == "CT7012", err.value
        assert f"no kernel `{name}`" in err.value.message


def test_a_bad_option_is_ct7011_and_the_target_is_cutiles() -> None:
    with pytest.raises(cutile.CompileError) as err:
        unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, options=["--no-such-flag"]).compile()
    assert err.value.code == "CT7011" and "--no-such-flag" in err.value.log
    for option in ("-arch=sm_80", "--gpu-architecture=sm_90", "-dlto", "-rdc=true"):
        with pytest.raises(cutile.LaunchError) as declared:
            unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, options=[option])
        assert declared.value.code == "CT6122", option
    with pytest.raises(cutile.CompileError) as target:
        unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS).compile("sm_11")
    assert target.value.code == "CT7011"
    assert "sm_90" in nvrtc.supported_archs()


def test_declarations_unlike_the_cpp_signature_are_ct6123() -> None:
    few = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS[:3])
    with pytest.raises(cutile.LaunchError) as err:
        few.compile()
    assert err.value.code == "CT6123" and "declares 3 parameters" in err.value.message
    wide = unsafe.raw_kernel(AXPY, "axpy", [*AXPY_PARAMS[:3], unsafe.scalar("n", "int64_t")])
    with pytest.raises(cutile.LaunchError) as err:
        wide.compile()
    assert err.value.code == "CT6123" and err.value.tensor == "n"
    assert "8 bytes, but the C++ parameter 3 is 4 bytes" in err.value.message
    # a float where the C++ takes a pointer: the same size, so only the caller knows
    assert unsafe.raw_kernel(AXPY, "axpy", [unsafe.scalar("a", "f32"),
                                            unsafe.scalar("x", "double"), *AXPY_PARAMS[2:]]
                             ).compile().cubin


def test_without_nvrtc_a_build_is_ct7010() -> None:
    code = ("import sys; sys.modules['cuda.bindings.nvrtc'] = None\n"
            "import cutile\n"
            "from cutile import unsafe\n"
            "k = unsafe.raw_kernel('__global__ void k() {}', 'k', [])\n"
            "try:\n"
            "    k.compile()\n"
            "except cutile.CompileError as e:\n"
            "    print(e.code, e.hint)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("CT7010 ") and "nvidia-cuda-nvrtc" in out.stdout


# -- LTO-IR and nvJitLink ----------------------------------------------------------------


def test_a_kernel_links_with_device_code_from_source_or_ltoir() -> None:
    from_source = unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, link=[HELPER]).compile()
    helper_ir = nvrtc.compile_program(HELPER, None, [], "sm_90", lto=True).data
    from_ir = unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, link=[helper_ir]).compile()
    for binary in (from_source, from_ir):
        assert binary.cubin[:4] == b"\x7fELF" and binary.symbol == "shift"
        assert [s.size for s in kernel_params(binary.cubin, "shift") or []] == [8, 4, 4]
    text = dump.sass(from_source.cubin)
    if text is not None:  # link-time optimization inlined the helper: no call is left
        assert "FFMA" in text and "CALL" not in text


def test_lto_alone_links_the_program_by_itself() -> None:
    binary = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, lto=True).compile()
    assert binary.cubin[:4] == b"\x7fELF" and kernel_params(binary.cubin, "axpy")


def test_an_unresolved_function_is_ct7013_with_nvjitlinks_log() -> None:
    with pytest.raises(cutile.CompileError) as err:
        unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, lto=True).compile()
    assert err.value.code == "CT7013" and "shifted" in err.value.log
    with pytest.raises(cutile.LaunchError) as declared:
        unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, link=[3.5])  # type: ignore[list-item]
    assert declared.value.code == "CT6122"


# -- the cache ---------------------------------------------------------------------------


def test_a_second_compile_is_a_cache_hit_in_memory_then_on_disk(own_cache: Path) -> None:
    first = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS).compile()
    assert first.from_cache == ""
    again = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS).compile()  # a fresh kernel object
    assert again.from_cache == "memory" and again.cubin == first.cubin
    MEMORY.clear()  # as a new process sees it
    from_disk = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS).compile()
    assert from_disk.from_cache == "disk" and from_disk.cubin == first.cubin
    assert from_disk.symbol == "axpy" and from_disk.key == first.key
    stored = DiskCache(own_cache).get(first.key)
    assert stored is not None and stored.endswith(first.cubin)


def test_the_key_covers_source_name_options_arch_and_nvrtc() -> None:
    base = unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS).program
    keys = {build(base, "sm_90").key}
    for program in (
        unsafe.raw_kernel(AXPY + "// edited\n", "axpy", AXPY_PARAMS).program,
        unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, options=["--use_fast_math"]).program,
        unsafe.raw_kernel(AXPY, "axpy", AXPY_PARAMS, lto=True).program,
    ):
        keys.add(build(program, "sm_90").key)
    keys.add(build(base, "sm_100").key)
    assert len(keys) == 5
    fields = _stored_fields(build(base, "sm_90").key)
    assert fields["name"] == "axpy" and fields["arch"] == "sm_90"
    assert fields["nvrtc"] == nvrtc.nvrtc_version() and fields["options"] == []
    assert len(fields["source_sha256"]) == 64


def test_a_linked_kernel_is_cached_with_its_inputs() -> None:
    one = build(unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, link=[HELPER]).program,
                "sm_90")
    other_helper = HELPER.replace("0.5f", "0.25f")
    two = build(unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS,
                                  link=[other_helper]).program, "sm_90")
    assert one.key != two.key and one.cubin != two.cubin
    MEMORY.clear()
    hit = build(unsafe.raw_kernel(CALLS_HELPER, "shift", SHIFT_PARAMS, link=[HELPER]).program,
                "sm_90")
    assert hit.from_cache == "disk" and hit.cubin == one.cubin
    fields = _stored_fields(one.key)
    assert fields["output"] == "linked-cubin" and fields["nvjitlink"] == nvrtc.nvjitlink_version()


def _stored_fields(key: str) -> dict[str, object]:
    import os

    from cutile.backend.cache_entry import decode_entry

    disk = DiskCache(Path(os.environ["CUTILE_CACHE_DIR"]))
    entry = decode_entry(disk.path(key).read_bytes())
    assert entry is not None
    return entry.fields
