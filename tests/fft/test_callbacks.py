"""cuFFT callbacks on a machine without a GPU: LTO-IR generation for every signature, argument checks,
the disk cache and its keys, pickling, and the cufftXtSetJITCallback binding's marshalling."""

import ctypes
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

import nvmathx.fft as nfft
from nvmathx import OperandError, OptionsError, UnsupportedOperandError
from nvmathx._bindings import cufft
from nvmathx._fftcore import callbacks as _callbacks
from nvmathx.device_api import cache_info, clear_cache

pytest.importorskip("numba.cuda")

ELEMENTS = ["complex64", "complex128", "float32", "float64"]
LTOIR_MAGIC = b"\xedCN\x7f"  # what NVVM's and NVRTC's LTO-IR start with


def scale_load(data, offset, info, smem):
    return data[offset] * 2


def scale_store(data, offset, value, info, smem):
    data[offset] = value * 3


def windowed(data, offset, window, smem):
    return data[offset] * window[offset % 16]


@pytest.mark.parametrize("element", ELEMENTS)
@pytest.mark.parametrize("role", ["prolog", "epilog"])
def test_every_signature_compiles_to_ltoir(callback_cache, role, element):
    compile_ = nfft.compile_prolog if role == "prolog" else nfft.compile_epilog
    callback = compile_(scale_load if role == "prolog" else scale_store, element_dtype=element, target="sm_90")
    assert isinstance(callback, nfft.CompiledCallback)
    assert callback.ltoir.startswith(LTOIR_MAGIC) and len(callback.ltoir) > 100
    assert (callback.role, callback.element_dtype, callback.target) == (role, element, "sm_90")
    kind = {"complex64": "Complex", "complex128": "DoubleComplex", "float32": "Real", "float64": "DoubleReal"}[element]
    assert f"cufftJITCallback{'Load' if role == 'prolog' else 'Store'}{kind}Pvy" in callback.symbol  # cuFFT's name
    expected = {"complex64": (0, 4), "complex128": (1, 5), "float32": (2, 6), "float64": (3, 7)}[element]
    assert callback.callback_type == int(cufft.CallbackType(expected[role == "epilog"]))
    assert callback.compute_capability == (9, 0)


def test_user_info_types_and_targets(callback_cache):
    a = nfft.compile_prolog(windowed, element_dtype=np.complex64, user_info_dtype=np.float32, target=(8, 0))
    b = nfft.compile_prolog(windowed, element_dtype="complex64", user_info_dtype="float64", target="sm_90a")
    assert a.user_info_dtype == "float32" and a.target == "sm_80"
    assert b.user_info_dtype == "float64" and b.target == "sm_90"  # LTO-IR for the generic architecture
    assert a.key != b.key and a.ltoir != b.ltoir


def test_pickles(callback_cache):
    callback = nfft.compile_epilog(scale_store, element_dtype="float64", target="sm_90")
    again = pickle.loads(pickle.dumps(callback))
    assert again == callback and again.ltoir == callback.ltoir
    for error in (nfft.CallbackCompileError("fn", "bad"), nfft.CallbacksUnavailableError("epilog: old cuFFT")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)


# -- typed errors ----------------------------------------------------------------------------------


def test_bad_functions_raise_with_numbas_message(callback_cache):
    def three_arguments(data, offset, info):
        return data[offset]

    def returns_nothing(data, offset, info, smem):
        data[offset] = 0

    def untypable(data, offset, info, smem):
        return data[offset] + "text"

    with pytest.raises(nfft.CallbackCompileError, match=r"^fn: a prolog takes 4 arguments"):
        nfft.compile_prolog(three_arguments, element_dtype="complex64", target="sm_90")
    with pytest.raises(nfft.CallbackCompileError, match=r"^fn: .*does not compile") as raised:
        nfft.compile_prolog(returns_nothing, element_dtype="complex64", target="sm_90")
    assert isinstance(raised.value, TypeError)
    with pytest.raises(nfft.CallbackCompileError, match=r"(?s)^fn: .*untypable does not compile.*No implementation"):
        nfft.compile_prolog(untypable, element_dtype="float32", target="sm_90")
    with pytest.raises(nfft.CallbackCompileError, match=r"^fn: expected a Python function"):
        nfft.compile_epilog(42, element_dtype="float32", target="sm_90")


@pytest.mark.parametrize("dtype", ["float16", "complex32" if hasattr(np, "complex32") else "int32", "bfloat16", object])
def test_element_types_without_callbacks(callback_cache, dtype):
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    with pytest.raises(UnsupportedOperandError, match=r"^element_dtype: "):
        nfft.compile_prolog(scale_load, element_dtype=dtype, target="sm_90")


def test_bad_user_info_and_target(callback_cache):
    with pytest.raises(UnsupportedOperandError, match=r"^user_info_dtype: "):
        nfft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="U4", target="sm_90")
    with pytest.raises(OptionsError, match=r"^target: "):
        nfft.compile_prolog(windowed, element_dtype="float32", target="ampere")
    with pytest.raises(OptionsError, match=r"^target: callbacks need compute capability 7.0 or newer \(got 6.0\)$"):
        nfft.compile_prolog(windowed, element_dtype="float32", target=(6, 0))


def test_no_target_needs_a_device(callback_cache, monkeypatch):
    from nvmathx._codegen import target

    monkeypatch.setattr(target, "_current_device_capability", lambda: (_ for _ in ()).throw(RuntimeError("no driver")))
    with pytest.raises(OptionsError, match=r"^target: no CUDA device could be queried \(RuntimeError: no driver\); "
                                           r"pass the target architecture explicitly, e\.g\. target=\(9, 0\)$"):
        nfft.compile_prolog(windowed, element_dtype="float32")


# -- the disk cache ------------------------------------------------------------------------------------


def test_disk_cache_hit_in_a_new_process_without_numba(callback_cache):
    callback = nfft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32", target="sm_90")
    assert cache_info().entries == 1
    script = f"""
import sys
from nvmathx.device_api import set_cache_dir, cache_info
import nvmathx.fft
set_cache_dir({str(callback_cache)!r})
{_source_of_windowed()}
callback = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32", target="sm_90")
assert "numba" not in sys.modules, "a cache hit imports no numba"
assert cache_info().hits == 1
print(callback.key, callback.symbol, callback.ltoir.hex())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    key, symbol, code = done.stdout.split()
    assert (key, symbol, bytes.fromhex(code)) == (callback.key, callback.symbol, callback.ltoir)


def _source_of_windowed():
    return "def windowed(data, offset, window, smem):\n    return data[offset] * window[offset % 16]\n"


def test_cache_hit_in_process_and_clear(callback_cache):
    first = nfft.compile_prolog(scale_load, element_dtype="float32", target="sm_90")
    assert nfft.compile_prolog(scale_load, element_dtype="float32", target="sm_90") is first
    _callbacks._compiled.clear()
    before = cache_info().hits
    again = nfft.compile_prolog(scale_load, element_dtype="float32", target="sm_90")
    assert cache_info().hits == before + 1 and again == first
    assert clear_cache() == 1 and cache_info().entries == 0
    _callbacks._compiled.clear()
    rebuilt = nfft.compile_prolog(scale_load, element_dtype="float32", target="sm_90")
    assert rebuilt.key == first.key and cache_info().entries == 1


def _key(fn, role="prolog", element="complex64", info=None, target="sm_90", compiler="numba-cuda"):
    return _callbacks.callback_cache_key(role, fn, element, info, target, compiler)


def test_cache_key_follows_code_types_target_and_values():
    def make(scale, offset_shift):
        def load(data, offset, info, smem):
            return data[offset + offset_shift] * scale
        return load

    base = _key(make(2.0, 0))
    assert base == _key(make(2.0, 0))  # a fresh but identical closure
    assert base != _key(make(3.0, 0)) and base != _key(make(2.0, 1))  # closure numbers
    assert base != _key(make(2.0, 0), role="epilog") and base != _key(make(2.0, 0), element="complex128")
    assert base != _key(make(2.0, 0), info="float32") and base != _key(make(2.0, 0), target="sm_80")

    def other_code(data, offset, info, smem):
        return data[offset] * 2.0 + 1.0

    assert _key(other_code) != _key(scale_load)
    assert base["compiler"] == "numba-cuda" and "compiler_version" in base and "nvvm_file" in base
    assert base != _key(make(2.0, 0), compiler="numba-cuda-mlir")  # the compiler is part of the key


def test_cache_key_follows_globals_and_called_functions():
    namespace = {"math": math}
    source = "def helper(v):\n    return v * FACTOR\n\ndef load(data, offset, info, smem):\n" \
             "    return helper(data[offset]) + math.pi\n"
    exec(compile(source, "<callbacks>", "exec"), namespace)  # noqa: S102 (functions with controllable globals)
    namespace["FACTOR"] = 2.0
    two = _key(namespace["load"])
    namespace["FACTOR"] = 3.0
    assert _key(namespace["load"]) != two  # a global number of a called function
    namespace["FACTOR"] = np.arange(4.0)
    arange = _key(namespace["load"])
    namespace["FACTOR"] = np.arange(4.0) + 1
    assert _key(namespace["load"]) != arange  # an array's contents
    namespace["FACTOR"] = object()
    assert _key(namespace["load"]) is None  # unhashable contents: compiled but not cached on disk


def test_uncacheable_function_writes_no_entry(callback_cache):
    marker = object()

    def load(data, offset, info, smem):
        return data[offset] + marker

    assert _key(load) is None
    with pytest.raises(nfft.CallbackCompileError, match="^fn: "):  # numba cannot type an arbitrary object...
        nfft.compile_prolog(load, element_dtype="float32", target="sm_90")
    assert cache_info().entries == 0  # ...and nothing was written for it


# -- the binding -----------------------------------------------------------------------------------------


def test_jit_entry_point_follows_the_version(monkeypatch):
    table = {"cufftXtSetJITCallback": object(), "__cufftXtSetJITCallback_12_7": object()}
    monkeypatch.setattr(cufft, "_lib", lambda: table)
    assert cufft.jit_callback_function(12000) == "cufftXtSetJITCallback"
    assert cufft.jit_callback_function(11300) == "__cufftXtSetJITCallback_12_7"
    assert cufft.jit_callback_function(11400) == "__cufftXtSetJITCallback_12_7"
    assert cufft.jit_callback_function(11206) is None
    del table["__cufftXtSetJITCallback_12_7"]
    assert cufft.jit_callback_function(11300) is None


def test_set_jit_callback_marshals_arguments(monkeypatch):
    calls = []

    def fake(plan, symbol, code, size, callback_type, caller_info):
        # What the C function would read: no name (NULL), the code bytes, one pointer per GPU.
        calls.append((plan, symbol, ctypes.string_at(ctypes.addressof(code), size),
                      callback_type, [caller_info[i] for i in range(len(caller_info))] if caller_info else None))
        return 0

    monkeypatch.setattr(cufft, "_lib", lambda: {"cufftXtSetJITCallback": fake})
    monkeypatch.setattr(cufft, "get_version", lambda: 12000)
    code = b"\xedCN\x7f\x00binary\x00code"
    keep = cufft.xt_set_jit_callback(7, code, cufft.CallbackType.LD_REAL, [0x7F0000001000])
    assert calls == [(7, None, code, 2, [0x7F0000001000])]
    assert len(keep) == 2
    cufft.xt_set_jit_callback(8, code, 6, None)
    assert calls[-1][-1] is None
    for bad in ([True], ["0x10"], [-1], [1 << 64]):
        with pytest.raises(TypeError, match="^caller_info: "):
            cufft.xt_set_jit_callback(9, code, 6, bad)
    with pytest.raises(ValueError):
        cufft.xt_set_jit_callback(9, code, 99, None)
    monkeypatch.setattr(cufft, "get_version", lambda: 11200)
    with pytest.raises(cufft.CufftError, match="CUFFT_NOT_SUPPORTED"):
        cufft.xt_set_jit_callback(9, code, 6, None)


def test_callback_symbols_are_cuffts_mangled_names():
    # cufftJITCallbackLoadComplex(void*, unsigned long long, void*, void*) and the store forms
    assert cufft.callback_symbol("load", "complex64") == "_Z27cufftJITCallbackLoadComplexPvyS_S_"
    assert cufft.callback_symbol("load", "float32") == "_Z24cufftJITCallbackLoadRealPvyS_S_"
    assert cufft.callback_symbol("store", "complex64") == "_Z28cufftJITCallbackStoreComplexPvy6float2S_S_"
    assert cufft.callback_symbol("store", "complex128") == "_Z34cufftJITCallbackStoreDoubleComplexPvy7double2S_S_"
    assert cufft.callback_symbol("store", "float64") == "_Z31cufftJITCallbackStoreDoubleRealPvydS_S_"


def test_unavailable_lto_names_the_versions(monkeypatch):
    monkeypatch.setattr(cufft, "jit_callback_function", lambda version=None: None)
    monkeypatch.setattr(_callbacks, "lto_versions", lambda: "cuFFT 11206 (/lib/libcufft.so.11), nvJitLink 12.4")
    with pytest.raises(nfft.CallbacksUnavailableError, match=r"^prolog: .*cuFFT >= 11.3.*found cuFFT 11206"):
        _callbacks.require_lto("prolog")
    error = cufft.CufftError(19, "CUFFT_NVJITLINK_FAILURE", "cufftMakePlanMany64")
    attached = [_callbacks.Attachment(_fake_callback("epilog"))]
    raised = _callbacks.link_error(error, attached)
    assert isinstance(raised, nfft.CallbacksUnavailableError) and "nvJitLink 12.4" in str(raised)
    assert str(raised).startswith("epilog: ")
    other = cufft.CufftError(8, "CUFFT_INVALID_SIZE", "cufftMakePlanMany64")
    assert _callbacks.link_error(other, attached) is other


def _fake_callback(role, element="complex64", key="k" * 64):
    return nfft.CompiledCallback(role, element, None, "sm_90", f"nvmathx_{role}_x", LTOIR_MAGIC + b"code", key)


def test_attachment_arguments():
    prolog = _fake_callback("prolog")
    assert _callbacks.attachment(None, "prolog", 0) is None
    assert _callbacks.attachment(prolog, "prolog", 0).pointer == 0
    with pytest.raises(OptionsError, match=r"^epilog: this callback was compiled as a prolog"):
        _callbacks.attachment(prolog, "epilog", 0)
    with pytest.raises(OptionsError, match=r"^prolog: expected a callback"):
        _callbacks.attachment(lambda: 0, "prolog", 0)
    with pytest.raises(OperandError, match=r"^prolog: .*GPU 0"):
        _callbacks.attachment((prolog, np.ones(4)), "prolog", 0)


def test_plan_keys_with_and_without_callbacks():
    args = ("C2C", (4, 16), (16, 1), np.complex64, (1,), (16,), 0, "torch", False, True)
    plain = nfft.plan_key(*args)
    prolog = _callbacks.Attachment(_fake_callback("prolog"), 0x1000)
    with_prolog = nfft.plan_key(*args, callbacks=_callbacks.attachments_key(prolog, None))
    other_data = nfft.plan_key(*args, callbacks=_callbacks.attachments_key(
        _callbacks.Attachment(_fake_callback("prolog"), 0x2000), None))
    other_code = nfft.plan_key(*args, callbacks=_callbacks.attachments_key(
        _callbacks.Attachment(_fake_callback("prolog", key="m" * 64), 0x1000), None))
    assert len({plain, with_prolog, other_data, other_code}) == 4
    assert nfft.plan_key(*args, callbacks=()) == plain
    hash(with_prolog)
