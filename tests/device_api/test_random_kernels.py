"""Kernels that call Random compile on a machine without a GPU, under each Numba compiler, down to
calls of the by-value entry points; bad calls are typing errors naming the expected call; and the
whole kernel links against cuRANDDx's code with nvJitLink."""

import numpy as np
import pytest

from helpers.compilers import H100, require
from helpers.compilers import compiled_calls as _calls
from helpers.requirements import needs_mathdx
from nvmathx.device_api._random import Random

from . import _kernels

pytestmark = needs_mathdx


@pytest.fixture(scope="module")
def xorwow():
    return Random("xorwow", "uniform", np.float32, sm=H100)


@pytest.fixture(scope="module")
def philox():
    return Random("philox4_32_10", "normal", np.float64, parameters=(1.0, 2.0), sm=H100)


def _fill_signature(compiler, rng):
    types = compiler.types
    state = getattr(types, np.dtype(rng.state_dtype).name)[:, ::1]
    out = getattr(types, np.dtype(rng.value_type).name)[:, ::1]
    return (state, out, types.uint64, types.int64)


def test_host_traits(xorwow, philox):
    assert (xorwow.state_size, xorwow.state_dtype, xorwow.state_words, xorwow.values_per_call) == (48, np.uint64, 6, 1)
    assert (philox.state_size, philox.state_alignment, philox.values_per_call, philox.value_type) == (32, 16, 4,
                                                                                                      np.float64)
    assert repr(philox).startswith("Random(generator='philox4_32_10', distribution='normal', dtype=float64")
    with pytest.raises(RuntimeError, match="only be called inside a numba.cuda.jit kernel"):
        xorwow.generate(None, None)


SOBOL = ["sobol32", "scrambled_sobol32", "sobol64", "scrambled_sobol64"]


def _sobol_signature(compiler, rng):
    types = compiler.types
    word = types.uint64 if rng.generator.endswith("64") else types.uint32
    out = getattr(types, np.dtype(rng.value_type).name)[:, ::1]
    return (word[:, ::1], word[::1], out, types.int64)


def _curand_tables():
    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("curand")
    except LibraryNotFoundError as error:
        pytest.skip(f"cuRAND not available: {error}")


def test_sobol_tables_come_from_curand():
    _curand_tables()
    vectors = Random("sobol32", "uniform", sm=H100).direction_vectors(3)
    assert vectors.shape == (3, 32) and vectors.dtype == np.uint32
    # dimension 0 is van der Corput's (bit i set alone), dimension 1 Sobol's m = 1, 3, 5, 15
    assert list(vectors[0, :4]) == [1 << 31, 1 << 30, 1 << 29, 1 << 28]
    assert list(vectors[1, :4]) == [1 << 31, 3 << 30, 5 << 29, 15 << 28]
    wide = Random("sobol64", "uniform_bits", sm=H100).direction_vectors(2)
    assert wide.shape == (2, 64) and wide.dtype == np.uint64 and wide[1, 1] == 3 << 62
    scrambled = Random("scrambled_sobol32", "uniform", sm=H100)
    assert not np.array_equal(scrambled.direction_vectors(3), vectors)  # the scrambled set
    constants = scrambled.scramble_constants(5)
    assert constants.shape == (5,) and constants.dtype == np.uint32 and len(set(constants)) == 5
    assert Random("scrambled_sobol64", "uniform", sm=H100).scramble_constants(2).dtype == np.uint64


@pytest.mark.parametrize("generator", SOBOL)
def test_sobol_kernel_calls_init_and_generate(compiler, generator):
    rng = Random(generator, "uniform", np.float64, sm=H100)
    calls = _calls(compiler, _kernels.sobol_fill(rng), _sobol_signature(compiler, rng))
    assert calls == [rng._function("init"), rng._function("generate")]


def test_sobol_init_takes_the_tables(compiler):
    rng = Random("scrambled_sobol32", "uniform", np.float32, sm=H100)

    def kernel(vectors, constants, out, offset):
        rng.init(0, vectors, offset, out[0])  # the constants are missing

    with pytest.raises(Exception, match="init\\(dimension, direction_vectors, scramble_constants, offset, state\\)"):
        _calls(compiler, kernel, _sobol_signature(compiler, rng))


def test_fill_kernel_calls_init_and_generate(compiler, xorwow):
    calls = _calls(compiler, _kernels.random_fill(xorwow), _fill_signature(compiler, xorwow))
    assert calls == [xorwow._function("init"), xorwow._function("generate")]


def test_skips_kernel_calls_its_skip_aheads(compiler, philox):
    types = compiler.types
    calls = _calls(compiler, _kernels.random_skips(philox), (types.float64[:, ::1], types.uint32, types.int32))
    assert calls == [philox._function(name) for name in ("init", "skip_subsequence", "skip_offset", "generate")]


@pytest.mark.parametrize("case, match", [
    ("float seed", "expected init\\(seed, subsequence, offset, state\\)"),
    ("wrong out dtype", "expected generate\\(state, out\\)"),
    ("skip_sequence on xorwow", "has no skip_sequence"),
])
def test_bad_calls_are_typing_errors(compiler, xorwow, case, match):
    rng = xorwow
    if case == "float seed":
        def kernel(states, out):
            rng.init(1.5, 0, 0, states[0])
    elif case == "wrong out dtype":
        def kernel(states, out):
            rng.generate(states[0], out[0])
    else:
        def kernel(states, out):
            rng.skip_sequence(states[0], 1)
    types = compiler.types
    signature = (types.uint64[:, ::1], types.float64[:, ::1])
    with pytest.raises(Exception, match=match):
        _calls(compiler, kernel, signature)


def test_numba_cuda_kernel_links_against_curanddx(philox):
    numba_cuda = require("numba-cuda")
    from numba.cuda.compiler import compile_cuda

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    result = compile_cuda(numba_cuda.bind(_kernels.random_fill(philox)), numba_cuda.types.void,
                          _fill_signature(numba_cuda, philox), cc=H100)
    # linked with link-time optimization, so the entry points are inlined into the kernel
    # (without it, generate's values went through local memory: 2.71 against 2.04 ms on the H200)
    assert result.library._lto
    assert len(result.library.get_cubin(cc=(9, 0, "a")).code) > 5000


@pytest.mark.parametrize("generator", ["sobol32", "scrambled_sobol64"])
def test_numba_cuda_sobol_kernel_links_against_curanddx(generator):
    numba_cuda = require("numba-cuda")
    from numba.cuda.compiler import compile_cuda

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    rng = Random(generator, "normal", np.float32, sm=H100)
    result = compile_cuda(numba_cuda.bind(_kernels.sobol_fill(rng)), numba_cuda.types.void,
                          _sobol_signature(numba_cuda, rng), cc=H100)
    assert len(result.library.get_cubin(cc=(9, 0, "a")).code) > 5000


def test_numba_cuda_mlir_kernel_links_against_curanddx(xorwow):
    mlir = require("numba-cuda-mlir")
    from numba_cuda_mlir.compiler import _compile_and_optimize

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    result = _compile_and_optimize(mlir.bind(_kernels.random_skips(xorwow)),
                                   (mlir.types.float32[:, ::1], mlir.types.uint64, mlir.types.int64),
                                   {"chip": "sm_90"})
    assert len(result.metadata["cubin"]) > 5000


@pytest.mark.parametrize("generator, distribution, dtype, parameters", [
    ("sobol32", "uniform", "float32", ()), ("scrambled_sobol32", "log_normal", "float32", (0.5, 0.25)),
    ("sobol64", "uniform_bits", "uint64", ()), ("scrambled_sobol64", "normal", "float64", ()),
    ("sobol64", "poisson", "uint32", (6.5,)),
])
def test_the_sobol_oracle_compiles(generator, distribution, dtype, parameters):
    """The GPU test's reference (cuRAND's Sobol device API through NVRTC) builds here, so a GPU run
    does not find a broken oracle first."""
    from helpers import curand_reference

    core = pytest.importorskip("cuda.core")
    folder, cccl = curand_reference.include_path(), curand_reference._cccl_folders()
    if folder is None or not cccl:
        pytest.skip("cuRAND's or CCCL's headers are not installed")
    options = core.ProgramOptions(arch="sm_90", std="c++17", include_path=[folder, *cccl],
                                  relocatable_device_code=True, link_time_optimization=True)
    source = curand_reference.sobol_source(generator, distribution, dtype, parameters)
    assert len(core.Program(source, "c++", options).compile("ltoir").code) > 1000
