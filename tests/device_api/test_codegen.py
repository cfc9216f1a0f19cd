"""Generated code through the disk cache: a miss generates, a hit reads, damage regenerates."""

import os

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx._codegen import cache as _cache
from nvmathx.device_api import FFT, cache_info, set_cache_dir

pytestmark = needs_mathdx

H100 = (9, 0)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "_override", None)  # restored afterwards
    set_cache_dir(tmp_path)
    return tmp_path / "device"


def _fft():
    return FFT(4, np.float32, direction="forward", execution="Thread", sm=H100)


def test_miss_then_hit_then_regenerate_after_damage(fresh_cache):
    before = cache_info()
    first = _fft().code()
    assert first.symbol.startswith("nvmathx_cufftdx_") and len(first.code) > 1000
    after_miss = cache_info()
    assert after_miss.misses == before.misses + 1 and after_miss.entries == 1

    again = _fft().code()  # a new object: read from disk, not regenerated
    assert again == first
    assert cache_info().hits == after_miss.hits + 1

    (path,) = [os.path.join(fresh_cache, name) for name in os.listdir(fresh_cache)]
    blob = bytearray(open(path, "rb").read())
    blob[len(blob) // 2] ^= 0x5A
    open(path, "wb").write(bytes(blob))
    corrupted = cache_info().corrupted
    regenerated = _fft().code()
    assert cache_info().corrupted == corrupted + 1
    assert regenerated.symbol == first.symbol and len(regenerated.code) > 1000
    assert _cache.load(_cache_key_of(_fft())) == regenerated  # the damaged file was replaced


def _cache_key_of(fft):
    from nvmathx._codegen.descriptors import cache_key

    return cache_key(fft.descriptor(), fft.target)


def test_key_covers_descriptor_target_and_versions():
    fft = _fft()
    key = _cache_key_of(fft)
    assert key["target"] == "sm_90a" and key["library"] == "cufftdx"
    assert {"libmathdx", "nvrtc"} <= set(key)
    other = FFT(4, np.float32, direction="inverse", execution="Thread", sm=H100)
    older = FFT(4, np.float32, direction="forward", execution="Thread", sm=(8, 0))
    names = {_cache.entry_name(_cache_key_of(f)) for f in (fft, other, older)}
    assert len(names) == 3


def test_symbols_differ_per_call_form():
    fft = FFT(8, np.float32, direction="forward", sm=H100)
    assert fft.descriptor("registers") != fft.descriptor("shared")


def test_prefetch_generates_in_another_process(fresh_cache, monkeypatch):
    from nvmathx._codegen import descriptors

    monkeypatch.delenv("NVMATHX_PARALLEL_CODEGEN", raising=False)
    fft = _fft()
    assert descriptors.prefetch(fft.descriptor(), fft.target)
    assert not descriptors.prefetch(fft.descriptor(), fft.target)  # already on its way

    def in_this_process(*args):
        raise AssertionError("generated in this process, not the prefetching one")

    monkeypatch.setattr(descriptors, "_generate", in_this_process)
    entry = fft.code()
    assert entry.symbol.startswith("nvmathx_cufftdx_") and len(entry.code) > 1000
    assert not descriptors.prefetch(fft.descriptor(), fft.target)  # on disk now


def test_prefetch_can_be_turned_off(fresh_cache, monkeypatch):
    from nvmathx._codegen import descriptors

    monkeypatch.setenv("NVMATHX_PARALLEL_CODEGEN", "0")
    fft = _fft()
    assert not descriptors.prefetch(fft.descriptor(), fft.target)
    assert descriptors._pending == {}


def test_a_failed_prefetch_is_redone_here_with_its_error(fresh_cache, monkeypatch):
    from nvmathx._bindings import mathdx
    from nvmathx._codegen import descriptors

    monkeypatch.delenv("NVMATHX_PARALLEL_CODEGEN", raising=False)
    library, operators = _fft().descriptor()
    broken = (library, tuple((name, 1 << 20 if name == "SIZE" else value) for name, value in operators))
    target = _fft().target
    assert descriptors.prefetch(broken, target)
    with pytest.raises(mathdx.MathdxError):
        descriptors.get_code(broken, target)
