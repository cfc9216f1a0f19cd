"""libmathdx bindings: versions, descriptors, traits and typed errors (libmathdx needs no GPU)."""

import pickle

import pytest

from nvmathx._core.errors import LibraryNotFoundError

try:
    from nvmathx._bindings import mathdx

    mathdx.version()
except LibraryNotFoundError as error:  # libmathdx not installed here
    pytest.skip(f"libmathdx not available: {error}", allow_module_level=True)

F = mathdx.FftOperator
T = mathdx.FftTrait


def _fft(size, ept=None, fpb=None, precision=mathdx.Precision.F32, execution=mathdx.Execution.BLOCK):
    handle = mathdx.fft_descriptor()
    handle.set(F.API, mathdx.FftApi.LMEM)
    handle.set(F.SIZE, size)
    handle.set(F.PRECISION, precision)
    handle.set(F.TYPE, mathdx.FftType.C2C)
    handle.set(F.DIRECTION, mathdx.FftDirection.FORWARD)
    handle.set(F.EXECUTION, execution)
    handle.set(F.SM, 900)
    if ept:
        handle.set(F.ELEMENTS_PER_THREAD, ept)
    if fpb:
        handle.set(F.FFTS_PER_BLOCK, fpb)
    return handle


def test_the_loaded_release_is_supported():
    assert mathdx.is_supported_release(mathdx.version())
    assert mathdx.features() == mathdx.release_features(mathdx.version())


def _reports(release):
    def get_version(major, minor, patch):
        major._obj.value, minor._obj.value, patch._obj.value = release
        return 0
    return {"mathdxGetVersionEx": get_version}


@pytest.mark.parametrize("release", [(0, 4, 1), (0, 3, 2), (0, 5, 0)])
def test_another_release_is_refused_when_the_library_loads(release):
    text = r"\.".join(map(str, release))
    refusal = rf"is libmathdx {text}; nvmathx binds the C API of 0\.3\.1 or 0\.4\.2 and later 0\.4 releases"
    with pytest.raises(LibraryNotFoundError, match=refusal) as caught:
        mathdx._require_supported_release(_reports(release))
    assert caught.value.library == "mathdx" and ">=0.4.2,<0.5" in caught.value.pip_package


@pytest.mark.parametrize("release", [(0, 3, 1), (0, 4, 2), (0, 4, 9)])
def test_a_supported_release_loads(release):
    mathdx._require_supported_release(_reports(release))


def test_what_each_line_has():
    old, new = mathdx.release_features((0, 3, 1)), mathdx.release_features((0, 4, 2))
    assert old.distribution_parameters_operator and old.solver_layout_traits
    assert not new.distribution_parameters_operator and not new.solver_layout_traits


def test_nvrtc_version_is_reported():
    major, minor = mathdx.nvrtc_version()
    assert major >= 12 or (major, minor) == (0, 0)


def test_block_fft_traits():
    with _fft(1024, ept=8, fpb=2) as handle:
        assert handle.trait(T.ELEMENTS_PER_THREAD) == 8
        assert handle.trait(T.STORAGE_SIZE) == 8
        assert handle.trait(T.STRIDE) == 128
        assert handle.traits(T.BLOCK_DIM, 3) == (128, 2, 1)
        assert handle.trait(T.FFTS_PER_BLOCK) == 2
        assert handle.trait(T.SHARED_MEMORY_SIZE) > 0
        assert handle.value_type(T.VALUE_TYPE) == mathdx.ValueType.C_32F
        assert handle.trait_str(T.SYMBOL_NAME)


def test_knobs_are_pairs_of_positive_ints():
    with _fft(256) as handle:
        pairs = handle.knobs((mathdx.FftKnob.ELEMENTS_PER_THREAD, mathdx.FftKnob.FFTS_PER_BLOCK))
    assert pairs and all(len(p) == 2 and p[0] >= 1 and p[1] >= 1 for p in pairs)
    assert all(256 % ept == 0 for ept, _ in pairs)


def test_unsupported_descriptor_raises_typed_error_with_status_name():
    with _fft(1 << 20) as handle:
        assert handle.is_supported() is False
        with pytest.raises(mathdx.MathdxError) as info:
            handle.trait(T.STORAGE_SIZE)
    assert info.value.status_name.startswith("COMMONDX_")
    assert info.value.function == "cufftdxGetTraitInt64"
    assert "LIBMATHDX_LOG_LEVEL" in str(info.value)


def test_supported_descriptor_answers_true():
    with _fft(1024, ept=8, fpb=2) as handle:
        assert handle.is_supported() is True


def test_generate_ltoir_for_the_arch_specific_target_of_a_block_fft():
    with _fft(64, ept=8, fpb=1) as handle:
        handle.set_symbol_name("nvmathx_binding_test_block_fft")
        code = mathdx.generate_ltoir(handle, 900, arch_specific=True)
    assert len(code) > 1000


def test_error_survives_pickling():
    error = mathdx.MathdxError(2, "COMMONDX_INTERNAL_ERROR", "cufftdxGetTraitInt64", "detail")
    again = pickle.loads(pickle.dumps(error))
    assert (again.status, again.status_name, again.function) == (2, "COMMONDX_INTERNAL_ERROR", "cufftdxGetTraitInt64")


def test_closed_descriptor_can_be_closed_again():
    handle = _fft(64)
    handle.close()
    handle.close()
    assert handle.handle is None


def test_generate_ltoir_for_a_thread_fft():
    with _fft(4, execution=mathdx.Execution.THREAD) as handle:
        handle.set_symbol_name("nvmathx_binding_test_fft")
        code = mathdx.generate_ltoir(handle, 900, arch_specific=True)
        assert handle.trait_str(T.SYMBOL_NAME) == "nvmathx_binding_test_fft"
    assert len(code) > 1000
