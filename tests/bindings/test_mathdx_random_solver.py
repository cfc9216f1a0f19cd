"""libmathdx's cuRANDDx and cuSOLVERDx bindings: descriptors, traits, LTO-IR and typed errors (no GPU).

The LTO-IR is encoded NVVM IR: the symbol names the traits give are not in its bytes. So a kernel that
calls them is linked with it by nvJitLink into an sm_90 cubin (no GPU needed either), which fails on
any name left unresolved. Those checks skip where cuda.core or nvJitLink is missing.
"""

import pytest

from helpers.link_probe import link_calls as _link
from nvmathx._core.errors import LibraryNotFoundError

try:
    from nvmathx._bindings import mathdx

    mathdx.version()
except LibraryNotFoundError as error:  # libmathdx not installed here
    pytest.skip(f"libmathdx not available: {error}", allow_module_level=True)

R = mathdx.RandOperator
RT = mathdx.RandTrait
S = mathdx.SolverOperator
ST = mathdx.SolverTrait
FATBIN_MAGIC = (0xBA55ED50).to_bytes(4, "little")


def _rand(generator, distribution, method, output=mathdx.ValueType.R_32F):
    """A Thread descriptor for SM 900 making the generate and init-state functions, with the operators
    0.3.1 needs (OUTPUT_TYPE too, which the header calls optional); traits not read yet."""
    handle = mathdx.rand_descriptor()
    handle.set(R.GENERATOR, generator)
    handle.set(R.SM, 900)
    handle.set(R.EXECUTION, mathdx.Execution.THREAD)
    handle.set(R.DISTRIBUTION, distribution)
    handle.set(R.OUTPUT_TYPE, output)
    handle.set(R.GENERATE_METHOD, method)
    handle.set(R.DEVICE_FUNCTIONS, mathdx.RandDeviceFunction.GENERATE | mathdx.RandDeviceFunction.INIT_STATE)
    return handle


def _solver(function, size, precision, fill_mode=None, block_dim=None):
    """A Block descriptor for SM 900, real, column major; traits not read yet."""
    handle = mathdx.solver_descriptor()
    handle.set(S.API, mathdx.SolverApi.SMEM)
    handle.set(S.FUNCTION, function)
    handle.set(S.SIZE, list(size))
    handle.set(S.PRECISION, precision)
    handle.set(S.TYPE, mathdx.SolverType.REAL)
    handle.set(S.ARRANGEMENT, mathdx.SolverArrangement.COL_MAJOR)
    handle.set(S.EXECUTION, mathdx.Execution.BLOCK)
    handle.set(S.SM, 900)
    if fill_mode is not None:
        handle.set(S.FILL_MODE, fill_mode)
    if block_dim is not None:
        handle.set(S.BLOCK_DIM, list(block_dim))
    return handle


def test_component_versions_are_those_of_the_loaded_release():
    expected = {(0, 3): ((0, 2, 2), (0, 3, 0)), (0, 4): ((0, 2, 5), (0, 6, 0))}[mathdx.version()[:2]]
    assert (mathdx.rand_version(), mathdx.solver_version()) == expected


# (generator, distribution, generate method, init-state pointer arguments, state size, alignment). Philox's
# normal distribution compiles only with generate4 (SINGLE and PAIR fail in NVRTC, Box-Muller too).
RANDOM_CASES = {
    "philox4_32_10-normal": (mathdx.RandGenerator.PHILOX4_32, mathdx.RandDistribution.NORMAL,
                             mathdx.RandGenerateMethod.QUAD, 4, 32, 16),
    "xorwow-uniform": (mathdx.RandGenerator.XORWOW, mathdx.RandDistribution.UNIFORM,
                       mathdx.RandGenerateMethod.SINGLE, 4, 48, 8),
    "sobol32-uniform": (mathdx.RandGenerator.SOBOL32, mathdx.RandDistribution.UNIFORM,
                        mathdx.RandGenerateMethod.SINGLE, 5, 140, 4),
}


@pytest.mark.parametrize("case", RANDOM_CASES)
def test_random_descriptor_traits_and_ltoir(case):
    generator, distribution, method, init_arguments, state_size, alignment = RANDOM_CASES[case]
    with _rand(generator, distribution, method) as handle:
        if generator == mathdx.RandGenerator.PHILOX4_32:
            handle.set(R.PHILOX_ROUNDS, 10)
            if mathdx.features().distribution_parameters_operator:  # 0.3.1; 0.4 takes them in generate
                handle.set_doubles(R.DISTRIBUTION_PARAMETERS, (2.0, 0.5))  # mean, standard deviation
        generate = handle.trait_str(RT.SYMBOL_GENERATE_NAME)
        init = handle.trait_str(RT.SYMBOL_INIT_STATE_NAME)
        assert generate.startswith("curanddx_generate_") and init.startswith("curanddx_init_")
        assert (handle.trait(RT.STATE_SIZE), handle.trait(RT.STATE_ALIGNMENT)) == (state_size, alignment)
        with pytest.raises(mathdx.MathdxError, match="COMMONDX_INVALID_VALUE"):
            handle.set(R.SM, 800)  # the first trait query froze the descriptor
        codes = mathdx.generate_ltoirs(handle, 900, arch_specific=False)
    assert len(codes) == 1 and len(codes[0]) > 1000
    arguments = 2 if mathdx.features().distribution_parameters_operator else 3  # 0.4: (state, out, params)
    assert _link([(generate, arguments), (init, init_arguments)], codes)
    with pytest.raises(AssertionError, match="Unresolved extern function 'nvmathx_not_generated'"):
        _link([(generate, arguments), ("nvmathx_not_generated", 2)], codes)


def test_random_descriptor_refuses_what_curanddx_lacks():
    with _rand(mathdx.RandGenerator.XORWOW, mathdx.RandDistribution.UNIFORM, mathdx.RandGenerateMethod.SINGLE) as h:
        with pytest.raises(TypeError, match="no curanddxSetOperatorInt64s"):
            h.set(R.GENERATOR, [0, 1])
        with pytest.raises(TypeError, match="no curanddxGetTraitInt64s"):
            h.traits(RT.STATE_SIZE, 1)
        with pytest.raises(TypeError, match="no curanddxGetLTOIRSize"):
            h.ltoir()


def test_potrf_f32_32x32_block_traits_ltoir_and_fatbin():
    with _solver(mathdx.SolverFunction.POTRF, (32, 32), mathdx.Precision.F32, mathdx.SolverFillMode.LOWER) as handle:
        handle.set_symbol_name("nvmathx_binding_test_potrf")
        assert handle.trait_str(ST.SYMBOL_NAME) == "nvmathx_binding_test_potrf"
        if mathdx.features().solver_layout_traits:  # 0.3.1 only
            assert handle.trait(ST.SHARED_MEMORY_SIZE) == 32 * 32 * 4
            assert handle.traits(ST.SUGGESTED_LEADING_DIMENSION, 2) == (36, 32)
        assert handle.traits(ST.BLOCK_DIM, 3) == handle.traits(ST.SUGGESTED_BLOCK_DIM, 3) == (32, 1, 1)
        assert handle.trait(ST.SUGGESTED_BATCHES_PER_BLOCK) == 1
        ltoir = handle.ltoir()
        fatbin = handle.universal_fatbin()
        assert mathdx.generate_ltoir(handle, 900, arch_specific=False, nvrtc_args=()) == ltoir
    assert len(ltoir) > 1000 and len(fatbin) > 1000 and fatbin[:4] == FATBIN_MAGIC
    calls = [("nvmathx_binding_test_potrf", 2)]  # (A, info)
    with pytest.raises(AssertionError, match="Unresolved extern function '_ZN10cusolverdx"):
        _link(calls, [ltoir])  # the LTO-IR calls into the library's code, which the fatbin holds
    assert _link(calls, [ltoir], fatbin)


def test_getrf_partial_pivot_f64_64x64_block():
    with _solver(mathdx.SolverFunction.GETRF_PARTIAL_PIVOT, (64, 64), mathdx.Precision.F64,
                 block_dim=(64, 1, 1)) as handle:
        name = handle.trait_str(ST.SYMBOL_NAME)
        assert name.startswith("cusolverdx_")
        if mathdx.features().solver_layout_traits:  # 0.3.1 only
            assert handle.trait(ST.SHARED_MEMORY_SIZE) >= 64 * 64 * 8
            lda, _ = handle.traits(ST.SUGGESTED_LEADING_DIMENSION, 2)
            assert lda >= 64
        assert handle.traits(ST.BLOCK_DIM, 3) == (64, 1, 1)
        assert handle.traits(ST.SUGGESTED_BLOCK_DIM, 3)[0] >= 32
        ltoir = mathdx.generate_ltoir(handle, 900, arch_specific=False)
        fatbin = handle.universal_fatbin()
    assert len(ltoir) > 1000
    assert _link([(name, 3)], [ltoir], fatbin)  # (A, ipiv, info)


def test_invalid_solver_and_random_descriptors_raise_typed_errors():
    with _solver(mathdx.SolverFunction.POTRF, (32, 32), mathdx.Precision.F32) as handle:  # no fill mode
        with pytest.raises(mathdx.MathdxError) as compiled:
            mathdx.generate_ltoir(handle, 900, arch_specific=False)
    # 0.3.1 finds out in NVRTC; 0.4 refuses the descriptor before compiling
    assert compiled.value.status_name in ("COMMONDX_COMPILATION_ERROR", "COMMONDX_INVALID_VALUE")
    assert compiled.value.function == "cusolverdxFinalizeCode"
    if mathdx.version()[:2] == (0, 3):  # 0.4 refuses it without a message
        assert "potrf requires a fill mode" in str(compiled.value)
    with mathdx.rand_descriptor() as handle:
        with pytest.raises(mathdx.MathdxError) as out_of_range:
            handle.set(R.GENERATOR, 99)
    assert out_of_range.value.status_name == "COMMONDX_INVALID_VALUE"
    assert out_of_range.value.function == "curanddxSetOperatorInt64"
    assert str(out_of_range.value).startswith("COMMONDX_INVALID_VALUE (1) in curanddxSetOperatorInt64")
    assert "fill mode" not in str(out_of_range.value)  # the compilation log above belongs to its own error
