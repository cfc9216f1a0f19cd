"""The fused solver engine's kernels build without a GPU: the CUDA C++ around the cuSOLVERDx
function, compiled by NVRTC and linked by nvJitLink for sm_90 (libmathdx, NVRTC and nvJitLink
needed; the first build takes tens of seconds, later ones read the disk cache)."""

import pytest

from helpers.requirements import needs_mathdx, needs_nvrtc
from nvmathx._codegen import fused_solver
from nvmathx._codegen import solver as solver_codegen
from nvmathx._codegen.target import Target

pytestmark = [needs_mathdx, needs_nvrtc]


def test_source_calls_the_function_with_shared_memory_arguments():
    spec = solver_codegen.solver_spec("gesv_partial_pivot", (8, 8, 2), "complex64", batches_per_block=3)
    source = fused_solver.kernel_source("kernel_x", "cusolverdx_f", spec, (32, 1, 1))
    assert 'extern "C" __device__ void cusolverdx_f(float2*, int*, float2*, int*);' in source
    assert "cusolverdx_f(sa, sipiv, sb, block_info);" in source
    assert "sb = sa + 192;" in source and "sipiv = reinterpret_cast<int*>(sb + 48);" in source  # 3 x 8 x 8, 3 x 8 x 2
    odd = solver_codegen.solver_spec("posv", (5, 5, 1), "float32")
    source = fused_solver.kernel_source("kernel_z", "cusolverdx_h", odd, (32, 1, 1))
    assert "sb = sa + 28;" in source  # 25 floats padded to 16-byte units
    assert "__launch_bounds__(32)" in source
    upper = solver_codegen.solver_spec("posv", (8, 8, 3), "float64", fill_mode="upper")
    source = fused_solver.kernel_source("kernel_y", "cusolverdx_g", upper, (64, 1, 1))
    assert "cusolverdx_g(sa, sb, block_info);" in source
    assert fused_solver.shared_memory_bytes(spec) >= 3 * 8 * 10 * 8 + 3 * 8 * 4


@pytest.mark.parametrize("structure, fill_mode", [("general", "lower"), ("positive definite", "upper")])
def test_kernel_links_for_hopper(structure, fill_mode):
    kernel = fused_solver.fused_solver_kernel(structure, 8, 1, "float32", Target(9, 0), fill_mode)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.symbol.startswith("nvmathx_fused_solver_")
    assert kernel.batches_per_block >= 1 and kernel.shared_memory_size >= 8 * 8 * 4
    threads = kernel.block_dim[0] * kernel.block_dim[1] * kernel.block_dim[2]
    assert 1 <= threads <= 1024
    again = fused_solver.fused_solver_kernel(structure, 8, 1, "float32", Target(9, 0), fill_mode)
    assert again.symbol == kernel.symbol and again.cubin == kernel.cubin  # from the disk cache
    assert fused_solver.is_cached(structure, 8, 1, "float32", Target(9, 0), fill_mode)


def test_is_cached_generates_nothing():
    import time

    start = time.perf_counter()
    assert not fused_solver.is_cached("general", 7, 3, "float64", Target(9, 0), "lower")  # never built
    assert not fused_solver.is_cached("general", 4096, 1, "float64", Target(9, 0))  # cuSOLVERDx refuses
    assert time.perf_counter() - start < 15  # traits only (a code generation takes longer)


def test_a_problem_cusolverdx_refuses_names_size():
    from nvmathx import OptionsError

    with pytest.raises(OptionsError, match="^size"):
        fused_solver.fused_solver_kernel("general", 4096, 1, "float64", Target(9, 0))
