"""cuRAND's device API as the oracle of nvmathx's device RNG: a CUDA C++ kernel calling
``curand_init`` and ``curand_*`` (curand_kernel.h through NVRTC, cuda.core), writing thread ``t``'s
values to row ``t`` as the tests' kernels do.

cuRAND's headers come from the nvidia-curand wheel (site-packages ``nvidia/cu13/include``; the GPU
calls carry them in .whl-curand/curand-headers.tar.xz) or a CUDA toolkit; NVRTC's bundled headers
supply the rest (cuda.core's ``use_bundled_headers``).
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

_STATES = {"xorwow": "curandStateXORWOW_t", "mrg32k3a": "curandStateMRG32k3a_t",
           "philox4_32_10": "curandStatePhilox4_32_10_t"}
_C_TYPES = {"float32": "float", "float64": "double", "uint32": "unsigned int"}

# (distribution, dtype, values per call) -> the cuRAND call making them ({p}: the parameters)
_CALLS = {
    ("uniform_bits", "uint32", 1): "curand(&state)",
    ("uniform_bits", "uint32", 4): "curand4(&state)",
    ("uniform", "float32", 1): "curand_uniform(&state)",
    ("uniform", "float64", 1): "curand_uniform_double(&state)",
    ("uniform", "float32", 4): "curand_uniform4(&state)",
    ("uniform", "float64", 2): "curand_uniform2_double(&state)",
    ("normal", "float32", 2): "curand_normal2(&state)",
    ("normal", "float64", 2): "curand_normal2_double(&state)",
    ("normal", "float32", 4): "curand_normal4(&state)",
    ("log_normal", "float32", 2): "curand_log_normal2(&state, {p0}, {p1})",
    ("log_normal", "float64", 2): "curand_log_normal2_double(&state, {p0}, {p1})",
    ("log_normal", "float32", 4): "curand_log_normal4(&state, {p0}, {p1})",
    ("poisson", "uint32", 1): "curand_poisson(&state, {p0})",
}
_FIELDS = ("x", "y", "z", "w")

# cuRANDDx's MRG32k3a doubles take 53 bits from two 32-bit draws, as cuRAND's XORWOW doubles do,
# where cuRAND's own MRG32k3a doubles are one MRG double each (measured on the H200): the oracle
# builds them from cuRAND's curand() draws with cuRAND's own formulas (curand_uniform.h,
# curand_normal.h). The draws are separate statements: C++ leaves argument order unspecified.
_DRAWS = "unsigned int x0 = curand(&state); unsigned int x1 = curand(&state);"
_BOX_MULLER = _DRAWS + " unsigned int y0 = curand(&state); unsigned int y1 = curand(&state);" \
                       " double2 v = _curand_box_muller_double(x0, x1, y0, y1);"
_MRG_DOUBLES = {
    ("uniform", "float64", 1): _DRAWS + " row[i] = _curand_uniform_double_hq(x0, x1);",
    ("normal", "float64", 2): _BOX_MULLER + " row[i] = v.x; row[i + 1] = v.y;",
    ("log_normal", "float64", 2): _BOX_MULLER + " row[i] = exp({p0} + {p1} * v.x);"
                                                " row[i + 1] = exp({p0} + {p1} * v.y);",
}

_SOURCE = """
#include <curand_kernel.h>
extern "C" __global__ void reference({value}* out, unsigned long long seed, unsigned long long offset,
                                     int per_thread, int threads)
{{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    {state} state;
    curand_init(seed, t, offset, &state);
    {value}* row = out + (long long)t * per_thread;
    for (int i = 0; i < per_thread; i += {count}) {{
        {body}
    }}
}}
"""


def has_reference(generator: str, distribution: str, dtype: str, values_per_call: int) -> bool:
    return generator in _STATES and (distribution, dtype, values_per_call) in _CALLS


def include_path() -> str | None:
    """A folder holding curand_kernel.h, or None."""
    candidates = [os.environ.get("NVMATHX_TEST_CURAND_INCLUDE", "")]
    candidates += [os.path.join(entry, "nvidia", "cu13", "include") for entry in sys.path if entry]
    candidates += [os.path.join(os.environ.get(name, ""), "include") for name in ("CUDA_HOME", "CUDA_PATH")]
    candidates.append("/usr/local/cuda/include")
    return next((folder for folder in candidates if folder and os.path.isfile(os.path.join(folder, "curand_kernel.h"))),
                None)


def source(generator: str, distribution: str, dtype: str, values_per_call: int, parameters) -> str:
    values = [repr(float(value)) for value in parameters] + ["", ""]
    call = _CALLS[(distribution, dtype, values_per_call)].format(p0=values[0], p1=values[1])
    if generator == "mrg32k3a" and (distribution, dtype, values_per_call) in _MRG_DOUBLES:
        body = _MRG_DOUBLES[(distribution, dtype, values_per_call)].format(p0=values[0], p1=values[1])
    elif values_per_call == 1:
        body = f"row[i] = {call};"
    else:
        body = f"auto v = {call};\n" + "".join(f"        row[i + {k}] = v.{_FIELDS[k]};\n"
                                               for k in range(values_per_call))
    return _SOURCE.format(value=_C_TYPES[dtype], state=_STATES[generator], count=values_per_call, body=body)


def _cccl_folders() -> list[str]:
    """Folders holding CCCL's ``nv/target`` (curand_kernel.h includes it), for an NVRTC without
    bundled headers."""
    roots = [os.path.join(entry, "nvidia", "cu13", "include") for entry in sys.path if entry]
    roots += ["/usr/local/cuda/include"]
    candidates = [os.path.join(root, "cccl") for root in roots] + roots
    return [folder for folder in candidates if os.path.isfile(os.path.join(folder, "nv", "target"))]


@functools.cache
def _kernel(text: str, arch: str):
    from cuda.core import Program, ProgramOptions

    folder = include_path()
    if folder is None:
        pytest.skip("cuRAND's headers (curand_kernel.h) are not installed: the reference cannot be built")
    attempts = [dict(include_path=[folder], use_bundled_headers=True), dict(include_path=[folder, *_cccl_folders()])]
    errors = []
    for extra in attempts:
        try:
            program = Program(text, "c++", ProgramOptions(arch=arch, std="c++17", **extra))
            return program.compile("cubin").get_kernel("reference")
        except Exception as error:  # noqa: BLE001 (an NVRTC without bundled headers: try the next way)
            errors.append(f"{extra}: {type(error).__name__}: {error}")
    pytest.skip("the cuRAND reference kernel does not compile here:\n" + "\n".join(errors))


def generate(generator: str, distribution: str, dtype: str, values_per_call: int, parameters, *, seed: int,
             offset: int, threads: int, per_thread: int, out) -> None:
    """Fill ``out`` (a device array of ``threads`` x ``per_thread`` values, any object with
    ``__cuda_array_interface__``) with cuRAND's values: thread ``t`` on subsequence ``t``."""
    from cuda.core import Device, LaunchConfig, launch

    device = Device()
    device.set_current()
    kernel = _kernel(source(generator, distribution, dtype, values_per_call, parameters), f"sm_{device.arch}")
    stream = device.create_stream()
    pointer = out.__cuda_array_interface__["data"][0]
    launch(stream, LaunchConfig(grid=(threads + 127) // 128, block=128), kernel, np.uint64(pointer), np.uint64(seed),
           np.uint64(offset), np.int32(per_thread), np.int32(threads))
    stream.sync()


# -- Sobol: thread t makes dimension t of the sequence, from the host API's tables ------------

_SOBOL_STATES = {"sobol32": "curandStateSobol32_t", "scrambled_sobol32": "curandStateScrambledSobol32_t",
                 "sobol64": "curandStateSobol64_t", "scrambled_sobol64": "curandStateScrambledSobol64_t"}
_SOBOL_CALLS = {
    ("uniform_bits", "uint32"): "curand(&state)",
    ("uniform_bits", "uint64"): "curand(&state)",
    ("uniform", "float32"): "curand_uniform(&state)",
    ("uniform", "float64"): "curand_uniform_double(&state)",
    ("normal", "float32"): "curand_normal(&state)",
    ("normal", "float64"): "curand_normal_double(&state)",
    ("log_normal", "float32"): "curand_log_normal(&state, {p0}f, {p1}f)",
    ("log_normal", "float64"): "curand_log_normal_double(&state, {p0}, {p1})",
    ("poisson", "uint32"): "curand_poisson(&state, {p0})",
}
_C_TYPES_64 = {**_C_TYPES, "uint64": "unsigned long long"}

_SOBOL_SOURCE = """
#include <curand_kernel.h>
extern "C" __global__ void reference({value}* out, const {word}* vectors, const {word}* constants,
                                     unsigned long long offset, int per_thread, int threads)
{{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    {state} state;
    curand_init(const_cast<{word}*>(vectors + (long long)t * {bits}), {scramble}({word})offset, &state);
    {value}* row = out + (long long)t * per_thread;
    for (int i = 0; i < per_thread; ++i) row[i] = {call};
}}
"""


def has_sobol_reference(generator: str, distribution: str, dtype: str) -> bool:
    return generator in _SOBOL_STATES and (distribution, dtype) in _SOBOL_CALLS


def sobol_source(generator: str, distribution: str, dtype: str, parameters) -> str:
    bits = 64 if generator.endswith("64") else 32
    values = [repr(float(value)) for value in parameters] + ["", ""]
    return _SOBOL_SOURCE.format(
        value=_C_TYPES_64[dtype], word=_C_TYPES_64[f"uint{bits}"], state=_SOBOL_STATES[generator], bits=bits,
        scramble="constants[t], " if generator.startswith("scrambled_") else "",
        call=_SOBOL_CALLS[(distribution, dtype)].format(p0=values[0], p1=values[1]))


def generate_sobol(generator: str, distribution: str, dtype: str, parameters, *, vectors, constants, offset: int,
                   threads: int, per_thread: int, out) -> None:
    """Fill ``out`` (``threads`` x ``per_thread``) with cuRAND's Sobol values: thread ``t`` on
    dimension ``t`` from point ``offset``; ``vectors`` and ``constants`` device arrays of the host
    API's tables (``__cuda_array_interface__``)."""
    from cuda.core import Device, LaunchConfig, launch

    device = Device()
    device.set_current()
    kernel = _kernel(sobol_source(generator, distribution, dtype, parameters), f"sm_{device.arch}")
    stream = device.create_stream()
    pointers = [np.uint64(array.__cuda_array_interface__["data"][0]) for array in (out, vectors, constants)]
    launch(stream, LaunchConfig(grid=(threads + 127) // 128, block=128), kernel, *pointers, np.uint64(offset),
           np.int32(per_thread), np.int32(threads))
    stream.sync()
