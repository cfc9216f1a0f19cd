"""The generated callbacks link into CUDA C++ callers the way cuFFT links them (nvJitLink, LTO), with
every call inlined and the values passed right: checked in the linked PTX, no GPU needed.

A caller compiled by NVRTC declares the callbacks with cuFFT's C signatures and calls them with
constants; after LTO the stored values must appear as folded constants and no call may remain (an
ABI mismatch leaves an indirect call through a prototype). Skipped where nvJitLink is missing or older
than the compilers (ERROR_OUTDATED_LIBRARY).
"""

import pytest

import nvmathx.fft as nfft
from helpers.compilers import require  # noqa: E402
from nvmathx._fftcore import callbacks as _callbacks
from nvmathx._fftcore import scale_callback as _scale_callback
from nvmathx.device_api import set_cache_dir

CALLER = r"""
extern "C" __device__ float2 LOAD_C64(void*, unsigned long long, void*, void*);
extern "C" __device__ void STORE_C64(void*, unsigned long long, float2, void*, void*);
extern "C" __device__ double2 LOAD_C128(void*, unsigned long long, void*, void*);
extern "C" __device__ void STORE_C128(void*, unsigned long long, double2, void*, void*);
extern "C" __device__ float LOAD_F32(void*, unsigned long long, void*, void*);
extern "C" __device__ void STORE_F64(void*, unsigned long long, double, void*, void*);
extern "C" __global__ void linked(float2* a, double2* b, float* c, double* d, float* factor) {
    unsigned long long i = threadIdx.x;
    a[i + 64] = LOAD_C64(a, i, nullptr, nullptr);
    STORE_C64(a, i, make_float2(1.5f, 2.5f), nullptr, nullptr);
    b[i + 64] = LOAD_C128(b, i, nullptr, nullptr);
    STORE_C128(b, i, make_double2(1.25, -3.0), nullptr, nullptr);
    c[i + 64] = LOAD_F32(c, i, nullptr, nullptr);
    STORE_F64(d, i, 0.5, nullptr, nullptr);
}
"""


SCALE_CALLER = r"""
extern "C" __device__ void SCALE_C64(void*, unsigned long long, float2, void*, void*);
extern "C" __global__ void linked(float2* a, float* factor) {
    SCALE_C64(a, threadIdx.x, make_float2(2.0f, 4.0f), factor, nullptr);
}
"""


def _linked_body(nvjitlink, template, name, callback) -> str:
    """The linked PTX of the kernel in ``template`` whose only call is ``name``'s callback."""
    from cuda.core import Program, ProgramOptions

    others = {"LOAD_C64", "STORE_C64", "LOAD_C128", "STORE_C128", "LOAD_F32", "STORE_F64", "SCALE_C64"} - {name}
    lines = [line for line in template.splitlines() if not any(other + "(" in line for other in others)]
    source = "\n".join(lines).replace(name, callback.symbol)
    options = ProgramOptions(arch="sm_90", relocatable_device_code=True, link_time_optimization=True)
    caller = bytes(Program(source, "c++", options).compile("ltoir").code)
    ptx = _link_ptx(nvjitlink, [("caller", caller), (name, callback.ltoir)])
    return ptx[ptx.index(".entry linked"):]


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception as error:  # noqa: BLE001 (missing library, old driver-less loader: skip)
        pytest.skip(f"nvJitLink is not available ({type(error).__name__})")
    return nvjitlink


def _link_ptx(nvjitlink, blobs):
    handle = nvjitlink.create(3, ["-arch=sm_90", "-lto", "-ptx"])
    try:
        for name, code in blobs:
            try:
                nvjitlink.add_data(handle, nvjitlink.InputType.LTOIR, code, len(code), name)
            except nvjitlink.nvJitLinkError as error:
                if "OUTDATED" in str(error):
                    pytest.skip(f"nvJitLink {nvjitlink.version()} is older than the LTO-IR's compiler")
                raise
        nvjitlink.complete(handle)
        ptx = bytearray(nvjitlink.get_linked_ptx_size(handle))
        nvjitlink.get_linked_ptx(handle, ptx)
        return ptx.decode()
    finally:
        nvjitlink.destroy(handle)


@pytest.mark.parametrize("compiler_name", ["numba-cuda-mlir", "numba-cuda"])
def test_callbacks_inline_with_the_values_cufft_passes(tmp_path, compiler_name):
    require(compiler_name)  # skips where it is missing; lets numba-cuda-mlir compile without a driver
    nvjitlink = _nvjitlink()
    set_cache_dir(tmp_path)
    _callbacks._compiled.clear()
    try:
        def load_add(data, offset, info, smem):
            return data[offset] + 1

        def store_twice(data, offset, value, info, smem):
            data[offset] = value * 2

        options = dict(target="sm_90", compiler=compiler_name)
        made = {
            "LOAD_C64": nfft.compile_prolog(load_add, element_dtype="complex64", **options),
            "STORE_C64": nfft.compile_epilog(store_twice, element_dtype="complex64", **options),
            "LOAD_C128": nfft.compile_prolog(load_add, element_dtype="complex128", **options),
            "STORE_C128": nfft.compile_epilog(store_twice, element_dtype="complex128", **options),
            "LOAD_F32": nfft.compile_prolog(load_add, element_dtype="float32", **options),
            "STORE_F64": nfft.compile_epilog(store_twice, element_dtype="float64", **options),
        }
        # Each callback defines cuFFT's one name for its role and type, so each links on its own, as in
        # a cuFFT plan (where a load and a store callback are the most that meet).
        bodies = [_linked_body(nvjitlink, CALLER, name, callback) for name, callback in made.items()]
        bodies.append(
            _linked_body(nvjitlink, SCALE_CALLER, "SCALE_C64", _scale_callback.scale_callback("complex64", "sm_90"))
        )
    finally:
        set_cache_dir(None)
        _callbacks._compiled.clear()
    for body in bodies:
        assert "call" not in body and "prototype" not in body, body
    body = "\n".join(bodies)
    # (1.5, 2.5) * 2 stored as (3.0, 5.0); (1.25, -3.0) * 2 as (2.5, -6.0); 0.5 * 2 as 1.0.
    for bits in ("1077936128", "1084227584"):  # float 3.0, 5.0 as integers, or as hex floats
        assert bits in body or {"1077936128": "0f40400000", "1084227584": "0f40A00000"}[bits] in body
    assert "4612811918334230528" in body or "0d4004000000000000" in body  # double 2.5
    assert "-4604930618986332160" in body or "0dC018000000000000" in body  # double -6.0
    assert "4607182418800017408" in body or "0d3FF0000000000000" in body  # double 1.0
