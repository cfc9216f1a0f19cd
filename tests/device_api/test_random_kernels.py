"""Kernels that call Random compile on a machine without a GPU, under each Numba compiler, down to
calls of the by-value entry points; bad calls are typing errors naming the expected call; and the
whole kernel links against cuRANDDx's code with nvJitLink."""

import numpy as np
import pytest

from helpers.compilers import H100, require
from helpers.compilers import compiled_calls as _calls
from helpers.requirements import needs_mathdx
from nvmathx import OptionsError
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


def test_quasi_random_generators_are_refused_for_now():
    with pytest.raises(OptionsError, match="^generator: sobol32 is not offered yet"):
        Random("sobol32", "uniform", sm=H100)


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
