"""FFT descriptors on the host: validation, error messages and traits (no GPU, no code generation)."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx import OptionsError
from nvmathx.device_api import FFT

H100 = (9, 0)


def _error(argument, **kwargs):
    arguments = dict(size=1024, precision=np.float32, direction="forward", sm=H100)
    arguments.update(kwargs)
    with pytest.raises(OptionsError) as info:
        FFT(**arguments)
    assert info.value.argument == argument, str(info.value)
    return str(info.value)


@needs_mathdx
def test_known_traits_of_a_1024_point_block_fft():
    fft = FFT(1024, np.float32, direction="forward", elements_per_thread=8, ffts_per_block=2, sm=H100)
    assert (fft.elements_per_thread, fft.ffts_per_block, fft.storage_size, fft.stride) == (8, 2, 8, 128)
    assert fft.block_dim == (128, 2, 1)
    assert fft.shared_memory_size > 0
    assert fft.value_dtype == np.complex64 and fft.alignment == 8
    assert fft.shared_api_memory_size >= 2 * 1024 * 8
    assert fft.target.name == "sm_90a"


@needs_mathdx
@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("size", [2, 3, 16, 17, 64, 128, 1000, 1024, 4096, 16384])
def test_block_traits_are_consistent(size, precision):
    fft = FFT(size, precision, direction="inverse", sm=H100)
    assert fft.elements_per_thread * fft.stride >= size
    assert fft.storage_size >= fft.elements_per_thread
    assert fft.block_dim[0] == fft.stride and fft.block_dim[1] == fft.ffts_per_block
    assert fft.input_length == fft.output_length == size
    assert fft.value_dtype == np.result_type(precision, np.complex64)
    assert fft.alignment == fft.value_dtype.itemsize
    assert fft.max_threads_per_block == fft.block_dim[0] * fft.block_dim[1] * fft.block_dim[2] <= 1024
    assert (fft.elements_per_thread, fft.ffts_per_block) in fft.valid_knobs() or fft.ffts_per_block >= 1


@needs_mathdx
@pytest.mark.parametrize("fft_type, direction", [("r2c", None), ("c2r", None), ("r2c", "forward"), ("c2r", "inverse")])
def test_real_transform_lengths(fft_type, direction):
    fft = FFT(256, np.float32, fft_type=fft_type, direction=direction, sm=H100)
    real, half = 256, 256 // 2 + 1
    expected = (real, half) if fft_type == "r2c" else (half, real)
    assert (fft.input_length, fft.output_length) == expected
    assert fft.direction == ("forward" if fft_type == "r2c" else "inverse")
    assert {np.dtype(fft.input_type), np.dtype(fft.output_type)} == {
        np.dtype(np.float32),
        np.dtype(np.complex64),
    }


@needs_mathdx
@pytest.mark.parametrize("size", [2, 4, 8, 16, 32])
def test_thread_execution_traits(size):
    fft = FFT(size, np.float32, direction="forward", execution="Thread", sm=H100)
    assert fft.storage_size >= size and fft.stride == 1
    assert fft.block_dim is None and fft.shared_memory_size == 0 and fft.ffts_per_block == 1
    assert fft.max_threads_per_block is None
    assert fft.valid_knobs() == [(size, 1)]


@needs_mathdx
def test_every_listed_knob_pair_constructs():
    pairs = FFT(512, np.float32, direction="forward", sm=H100).valid_knobs()
    assert pairs
    for ept, fpb in pairs:
        fft = FFT(512, np.float32, direction="forward", elements_per_thread=ept, ffts_per_block=fpb, sm=H100)
        assert (fft.elements_per_thread, fft.ffts_per_block) == (ept, fpb)


@needs_mathdx
def test_size_out_of_range_names_size():
    message = _error("size", size=1 << 20)
    assert "1048576-point" in message and "sm_90a" in message
    _error("size", size=32768, precision=np.float64)
    _error("size", size=1024, execution="Thread")


@needs_mathdx
def test_a_failing_support_query_is_not_reported_as_a_size(monkeypatch):
    from nvmathx._bindings import mathdx

    def fail(handle):
        raise mathdx.MathdxError(2, "COMMONDX_INTERNAL_ERROR", "cufftdxIsSupported")

    monkeypatch.setattr(mathdx._Descriptor, "is_supported", fail)
    with pytest.raises(mathdx.MathdxError, match="cufftdxIsSupported"):
        FFT(64, np.float32, direction="forward", sm=H100)


@needs_mathdx
def test_blocks_beyond_the_architecture_name_ffts_per_block():
    message = _error("ffts_per_block", elements_per_thread=8, ffts_per_block=200)
    assert "232448" in message
    _error("ffts_per_block", size=64, elements_per_thread=2, ffts_per_block=64)  # 2048 threads


@needs_mathdx
def test_registers_and_shared_forms_differ_only_in_the_api_operator():
    fft = FFT(64, np.float32, direction="forward", sm=H100)
    registers, shared = dict(fft.descriptor("registers")[1]), dict(fft.descriptor("shared")[1])
    assert registers.pop("API") != shared.pop("API") and registers == shared
    with pytest.raises(OptionsError, match="api"):
        fft.descriptor("global")


@pytest.mark.parametrize("size", [0, 1, -4, 2.5, "64", True])
def test_malformed_size(size):
    _error("size", size=size)


@needs_mathdx
def test_illegal_knobs_name_the_knob_and_list_legal_pairs():
    message = _error("elements_per_thread", elements_per_thread=3)
    assert "tuned (elements_per_thread, ffts_per_block) pairs" in message
    _error("elements_per_thread", elements_per_thread=0)
    _error("ffts_per_block", ffts_per_block=-1)
    _error("ffts_per_block", ffts_per_block="many")
    _error("elements_per_thread", execution="Thread", size=16, elements_per_thread=4)
    _error("ffts_per_block", execution="Thread", size=16, ffts_per_block=2)


@pytest.mark.parametrize(
    "argument, kwargs",
    [
        ("precision", {"precision": np.complex64}),
        ("precision", {"precision": np.float16}),
        ("precision", {"precision": "not a dtype"}),
        ("fft_type", {"fft_type": "r2r"}),
        ("direction", {"direction": None}),
        ("direction", {"direction": "backward"}),
        ("direction", {"fft_type": "r2c", "direction": "inverse"}),
        ("direction", {"fft_type": "c2r", "direction": "forward"}),
        ("execution", {"execution": "Warp"}),
        ("sm", {"sm": (6, 1)}),
        ("sm", {"sm": "gfx90a"}),
        ("sm", {"sm": 9.0}),
    ],
)
def test_bad_arguments_are_named(argument, kwargs):
    _error(argument, **kwargs)


def test_complex_precision_hint_names_the_real_type():
    assert "float32 for complex64" in _error("precision", precision=np.complex64)


@needs_mathdx
@pytest.mark.parametrize(
    "sm, name", [((8, 0), "sm_80"), (90, "sm_90a"), (900, "sm_90a"), ("sm_90a", "sm_90a"), ("sm_120", "sm_120a")]
)
def test_sm_forms(sm, name):
    assert FFT(64, np.float32, direction="forward", sm=sm).target.name == name


@needs_mathdx
def test_execute_outside_a_kernel_raises():
    fft = FFT(64, np.float32, direction="forward", sm=H100)
    with pytest.raises(RuntimeError, match="numba.cuda.jit"):
        fft.execute(np.zeros(64, np.complex64))


@needs_mathdx
def test_repr_names_the_descriptor():
    text = repr(FFT(16, "float64", direction="inverse", execution="thread", sm=H100))
    assert "size=16" in text and "float64" in text and "'inverse'" in text and "'Thread'" in text
