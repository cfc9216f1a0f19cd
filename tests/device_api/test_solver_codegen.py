"""cuSOLVERDx code through the compiler-neutral layer (``nvmathx._codegen.solver``): what a spec
accepts and refuses before libmathdx compiles anything, the shared memory it needs against
cuSOLVERDx's own trait, and Solver kernels compiled and linked (with cuSOLVERDx's fatbin) under
each Numba compiler on a machine without a GPU."""

import numpy as np
import pytest

from helpers.compilers import H100, require
from helpers.compilers import compiled_calls as _calls
from helpers.requirements import needs_mathdx
from nvmathx import OptionsError
from nvmathx._codegen import solver as solver_codegen
from nvmathx._codegen.target import Target
from nvmathx.device_api._solver import Solver

from . import _kernels

TARGET = Target(9, 0)

# (label, arguments of solver_spec, argument named, message fragment)
BAD_SPECS = [
    ("unknown function", dict(function="syevd", size=(8, 8)), "function", "'potrf'"),
    ("rectangular cholesky", dict(function="potrf", size=(8, 4)), "size", "square"),
    ("factorization with k", dict(function="geqrf", size=(8, 4, 2)), "size", "takes (m, n)"),
    ("solve without k", dict(function="posv", size=(8, 8)), "size", "right-hand sides"),
    ("zero size", dict(function="getrf_partial_pivot", size=(0, 4)), "size", "positive integer"),
    ("boolean size", dict(function="potrf", size=True), "size", "takes (m, n)"),
    ("too many reflectors", dict(function="unmqr", size=(8, 4, 9)), "size", "from the left applies at most 8"),
    ("right side reflectors", dict(function="unmqr", size=(8, 4, 5), side="right"), "size", "at most 4"),
    ("unknown side", dict(function="unmqr", size=(8, 4, 2), side="top"), "side", "'left' or 'right'"),
    ("side for potrf", dict(function="potrf", size=8, side="left"), "side", "unmqr only"),
    ("unknown transpose", dict(function="unmqr", size=(8, 4, 2), transpose="T"), "transpose", "'transposed'"),
    ("integer dtype", dict(function="potrf", size=8, dtype=np.int32), "dtype", "float32"),
    ("half precision", dict(function="potrf", size=8, dtype=np.float16), "dtype", "complex128"),
    ("fill mode for lu", dict(function="getrf_no_pivot", size=8, fill_mode="lower"), "fill_mode", "potrf, potrs"),
    ("unknown fill mode", dict(function="potrf", size=8, fill_mode="both"), "fill_mode", "'lower' or 'upper'"),
    ("unknown arrangement", dict(function="potrf", size=8, arrangement="tiled"), "arrangement", "'col_major'"),
    ("zero batches", dict(function="potrf", size=8, batches_per_block=0), "batches_per_block", "positive"),
    ("four block dimensions", dict(function="potrf", size=8, block_dim=(32, 1, 1, 1)), "block_dim", "1 to 3"),
    ("too many threads", dict(function="potrf", size=8, block_dim=(64, 32)), "block_dim", "1024 threads"),
    ("128x128 complex128", dict(function="potrf", size=128, dtype=np.complex128, target=TARGET), "size",
     "needs 262144 bytes of shared memory; sm_90a has 232448"),
    ("batches that overflow", dict(function="gesv_partial_pivot", size=(96, 96, 4), dtype=np.float64,
                                   batches_per_block=4, target=TARGET), "size", "4 batch(es) per block"),
    ("lda under the rows", dict(function="posv", size=(32, 32, 1), leading_dimension=(31, 32)), "leading_dimension",
     "lda = 31 is less than the col_major matrix needs (32)"),
    ("ldb under a row-major b", dict(function="posv", size=(32, 32, 4), arrangement="row_major",
                                     leading_dimension=(32, 3)), "leading_dimension", "ldb = 3 is less"),
    ("ldc for unmqr", dict(function="unmqr", size=(8, 4, 2), leading_dimension=(8, 7)), "leading_dimension",
     "ldc = 7"),
    ("two for a factorization", dict(function="potrf", size=8, leading_dimension=(8, 8)), "leading_dimension",
     "potrf takes None, 'suggested' or (lda)"),
    ("one for a solve", dict(function="gesv_partial_pivot", size=(8, 8, 1), leading_dimension=9),
     "leading_dimension", "(lda, ldb)"),
    ("zero leading dimension", dict(function="geqrf", size=(8, 4), leading_dimension=(0,)), "leading_dimension",
     "positive integer"),
    ("padding that overflows", dict(function="potrf", size=120, dtype=np.complex128, leading_dimension=(242,),
                                    target=TARGET), "size", "needs 464640 bytes"),
]


@pytest.mark.parametrize("label, kwargs, argument, fragment", BAD_SPECS, ids=[row[0] for row in BAD_SPECS])
def test_bad_specs_raise_options_error_naming_the_argument(label, kwargs, argument, fragment):
    with pytest.raises(OptionsError) as raised:
        solver_codegen.solver_spec(**kwargs)
    assert raised.value.argument == argument
    assert fragment in str(raised.value)


def test_solver_refuses_on_the_host_and_outside_kernels():
    with pytest.raises(OptionsError, match="^block_dim: expected 'suggested'"):
        Solver("potrf", 8, block_dim="auto", sm=H100)
    solver = Solver("gels", (16, 8, 2), np.complex64, sm=H100)
    assert (solver.a_size, solver.tau_size, solver.b_size, solver.lda, solver.ldb) == (128, 8, 32, 16, 16)
    assert solver.arguments == ("a", "tau", "b")
    with pytest.raises(RuntimeError, match="only be called inside a numba.cuda.jit kernel"):
        solver.execute()
    with pytest.raises(OptionsError, match="^leading_dimension: expected 'suggested'"):
        Solver("potrf", 8, leading_dimension="padded", sm=H100)


# (function, size, dtype, batches per block): our shared memory against cuSOLVERDx's trait
SHARED_MEMORY_CASES = [
    ("potrf", (33, 33), "complex128", 1),
    ("posv", (32, 32, 4), "float32", 2),
    ("getrf_partial_pivot", (64, 32), "float64", 1),
    ("gesv_partial_pivot", (24, 24, 3), "complex64", 1),
    ("geqrf", (16, 32), "float32", 1),
    ("gels", (40, 24, 2), "float64", 1),
    ("unmqr", (64, 32, 8), "float32", 1),
]


@needs_mathdx
@pytest.mark.parametrize("function, size, dtype, batches", SHARED_MEMORY_CASES,
                         ids=[f"{c[0]}-{c[2]}-x{c[3]}" for c in SHARED_MEMORY_CASES])
def test_shared_memory_matches_cusolverdx(function, size, dtype, batches):
    solver = Solver(function, size, dtype, batches_per_block=batches, sm=H100)
    assert solver.shared_memory_size == solver_codegen.shared_memory_bytes(solver._spec)
    assert solver.block_size >= 32 and solver._entry().symbol.startswith("nvmathx_cusolverdx_")


# the same at padded leading dimensions: (function, size, dtype, arrangement, leading_dimension)
PADDED_CASES = [
    ("potrf", (32, 32), "float32", "col_major", (36,)),
    ("posv", (32, 32, 4), "float32", "row_major", (36, 8)),
    ("gesv_partial_pivot", (64, 64, 1), "float64", "col_major", (66, 64)),
    ("geqrf", (16, 32), "complex64", "row_major", (33,)),
    ("gels", (40, 24, 2), "float64", "col_major", (44, 48)),
    ("unmqr", (64, 32, 8), "float32", "col_major", (70, 66)),
]


@needs_mathdx
@pytest.mark.parametrize("function, size, dtype, arrangement, leading_dimension", PADDED_CASES,
                         ids=[f"{c[0]}-{c[3]}" for c in PADDED_CASES])
def test_padded_shared_memory_matches_cusolverdx(function, size, dtype, arrangement, leading_dimension):
    solver = Solver(function, size, dtype, arrangement=arrangement, leading_dimension=leading_dimension, sm=H100)
    assert solver.leading_dimension == leading_dimension == (solver.lda, solver.ldb)[: len(leading_dimension)]
    assert solver.shared_memory_size == solver_codegen.shared_memory_bytes(solver._spec)
    packed = Solver(function, size, dtype, arrangement=arrangement, sm=H100)
    assert solver.a_size > packed.a_size and solver._entry().symbol != packed._entry().symbol


@needs_mathdx
def test_suggested_leading_dimensions_are_cusolverdx_padding():
    solver = Solver("gesv_partial_pivot", (64, 64, 1), np.float64, leading_dimension="suggested", sm=H100)
    packed = Solver("gesv_partial_pivot", (64, 64, 1), np.float64, sm=H100)
    assert solver.leading_dimension == packed.code().suggested_leading_dimensions
    assert solver.lda > 64 and solver.a_size == solver.lda * 64
    assert "leading_dimension=(" in repr(solver) and "leading_dimension" not in repr(packed)
    factor = Solver("potrf", 32, np.float32, leading_dimension="suggested", sm=H100)
    assert len(factor.leading_dimension) == 1 and factor.ldb == 0


@needs_mathdx
def test_shared_memory_of_q_from_the_right():
    solver = Solver("unmqr", (24, 40, 8), np.complex64, side="right", transpose="conj_transposed", sm=H100)
    assert (solver.a_size, solver.c_size, solver.lda) == (40 * 8, 24 * 40, 40)
    assert solver.shared_memory_size == solver_codegen.shared_memory_bytes(solver._spec)


@needs_mathdx
def test_libmathdx_refuses_what_the_table_refuses():
    """The 128 x 128 complex128 Cholesky the spec refuses does not compile in libmathdx 0.3.1 either."""
    from nvmathx._bindings import mathdx

    if not mathdx.features().solver_layout_traits:
        pytest.skip("libmathdx 0.4 generates it (no shared-memory check when generating); the spec refuses it first")
    spec = solver_codegen.SolverSpec("potrf", 128, 128, 0, "complex128", "lower", "col_major", 1, None)
    with pytest.raises(OptionsError, match="^size: cuSOLVERDx does not generate .*COMMONDX_COMPILATION_ERROR"):
        solver_codegen.solver_code(spec, TARGET)


def _signature(compiler, solver):
    types = compiler.types
    value = getattr(types, np.dtype(solver.value_type).name)[:, ::1]
    return (value, value, types.int32[:, ::1], value, types.int32[:, ::1])


@needs_mathdx
@pytest.mark.parametrize("function, size, dtype", [("posv", (16, 16, 2), np.float64),
                                                   ("gesv_partial_pivot", (8, 8, 1), np.complex64),
                                                   ("gels", (12, 8, 1), np.float32)])
def test_kernels_call_the_generated_function(compiler, function, size, dtype):
    solver = Solver(function, size, dtype, sm=H100)
    assert _calls(compiler, _kernels.solver_kernel(solver), _signature(compiler, solver)) == [solver._entry().symbol]


@needs_mathdx
def test_wrong_arguments_are_typing_errors(compiler):
    solver = Solver("getrf_partial_pivot", (8, 8), np.float32, sm=H100)

    def kernel(a, b, ipiv, tau, info):
        solver.execute(a[0], info[0])  # ipiv missing

    with pytest.raises(Exception, match=r"expected execute\(a, ipiv, info\)"):
        _calls(compiler, kernel, _signature(compiler, solver))


def _skip_without_nvjitlink():
    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")


@needs_mathdx
def test_numba_cuda_kernel_links_with_the_fatbin():
    numba_cuda = require("numba-cuda")
    from numba.cuda.compiler import compile_cuda

    _skip_without_nvjitlink()
    solver = Solver("potrf", 16, np.float32, sm=H100)
    result = compile_cuda(numba_cuda.bind(_kernels.solver_kernel(solver)), numba_cuda.types.void,
                          _signature(numba_cuda, solver), cc=H100)
    assert len(result.library.get_cubin(cc=(9, 0, "a")).code) > 10000


@needs_mathdx
def test_numba_cuda_mlir_kernel_links_with_the_fatbin():
    mlir = require("numba-cuda-mlir")
    from numba_cuda_mlir.compiler import _compile_and_optimize

    _skip_without_nvjitlink()
    solver = Solver("gesv_partial_pivot", (8, 8, 2), np.float64, sm=H100)
    result = _compile_and_optimize(mlir.bind(_kernels.solver_kernel(solver)), _signature(mlir, solver),
                                   {"chip": "sm_90"})
    assert len(result.metadata["cubin"]) > 10000


@needs_mathdx
@pytest.mark.parametrize("options", [dict(function="posv", size=(32, 32, 1), dtype=np.float32, batches_per_block=2,
                                          leading_dimension="suggested"),
                                     dict(function="gesv_partial_pivot", size=(64, 64, 1), dtype=np.float64,
                                          arrangement="row_major", leading_dimension="suggested")],
                         ids=["posv-suggested", "gesv-row-major-suggested"])
def test_the_device_suites_solver_kernel_compiles(compiler, options):
    """benchmarks/suites/device.py's solver kernel at padded leading dimensions (it checks its
    solutions against numpy on the GPU)."""
    from benchmarks.suites.device import _solver_kernel

    if compiler.name == "numba-cuda":
        pytest.skip("numba-cuda asks the driver while lowering the kernel's array.view (no driver here)")
    solver = Solver(**options, sm=H100)
    kernel, shared_bytes = _solver_kernel(compiler.cuda, solver)
    value = getattr(compiler.types, np.dtype(solver.value_type).name)[:, ::1]
    signature = (value, value, compiler.types.int32[::1])
    assert _calls(compiler, kernel.py_func, signature) == [solver._entry().symbol]
    assert shared_bytes >= solver.shared_memory_size + 4 * solver.info_size


# cuSOLVERDx's suggested leading dimensions: libmathdx 0.4 dropped the trait, so nvmathx computes them
# (padded_leading_dimensions); the rule must equal 0.3.1's trait. (function, size, dtype, arrangement)
SUGGESTION_CASES = [
    ("potrf", (32, 32), "float32", "col_major"),  # 128-byte columns: padded by 16 bytes
    ("potrf", (24, 24), "float32", "col_major"),  # 96 bytes: not padded
    ("getrf_partial_pivot", (64, 48), "float64", "col_major"),
    ("getrf_partial_pivot", (48, 64), "float64", "row_major"),  # rows span n = 64 elements
    ("gesv_partial_pivot", (64, 64, 3), "complex128", "col_major"),  # 16-byte elements: one more
    ("geqrf", (16, 16), "complex64", "col_major"),  # exactly 128 bytes
    ("potrs", (128, 128, 99), "float64", "col_major"),  # padding would overflow the 227 KiB: not padded
]


@pytest.mark.parametrize("function, size, dtype, arrangement", SUGGESTION_CASES,
                         ids=[f"{c[0]}-{c[2]}-{c[3]}-{'x'.join(map(str, c[1]))}" for c in SUGGESTION_CASES])
def test_the_padding_rule_is_cusolverdx_03s_trait(function, size, dtype, arrangement):
    spec = solver_codegen.solver_spec(function, size, dtype, arrangement=arrangement)
    ours = solver_codegen.padded_leading_dimensions(spec, TARGET)
    packed = solver_codegen.packed_leading_dimensions(spec)
    assert len(ours) == len(packed) and ours[1:] == packed[1:]
    itemsize = np.dtype(dtype).itemsize
    assert ours[0] in (packed[0], packed[0] + 16 // itemsize)
    from nvmathx._bindings import mathdx

    try:
        supported = mathdx.features().solver_layout_traits
    except Exception as error:  # noqa: BLE001  (no libmathdx: the rule's own checks above still ran)
        pytest.skip(f"libmathdx not available: {error}")
    if not supported:
        pytest.skip(f"libmathdx {mathdx.version()} has no SUGGESTED_LEADING_DIMENSION trait to compare with")
    traits = solver_codegen._query(spec, TARGET)
    assert tuple(traits["suggested_leading_dimensions"][: len(packed)]) == ours
