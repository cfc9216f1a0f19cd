"""cuFFT callbacks and the fused norm scale on a real GPU, against numpy in float64."""

import numpy as np
import pytest

import nvmathx.fft as nfft

pytestmark = pytest.mark.gpu

TOLERANCE = {"single": 2e-6, "double": 1e-12}  # relative to the reference's norm
DTYPES = {("single", False): np.float32, ("single", True): np.complex64, ("double", False): np.float64,
          ("double", True): np.complex128}
# (transform, axes kwargs, operand shape): 1-D, 2-D, 3-D, batched
CASES = [("1d", {"axis": -1}, (64,)), ("batched", {"axis": -1}, (7, 48)), ("2d", {"axes": (-2, -1)}, (5, 12, 16)),
         ("3d", {"axes": (-3, -2, -1)}, (3, 6, 8, 10))]
FORMS = {"C2C": ("fft", "fft", "fftn"), "R2C": ("rfft", "rfft", "rfftn"), "C2R": ("irfft", "irfft", "irfftn")}


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _error(got, expected):
    got, expected = np.asarray(got, np.complex128), np.asarray(expected, np.complex128)
    assert got.shape == expected.shape
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


def _call(fft_type, case, x, **kwargs):
    name, axes, _ = case
    function = FORMS[fft_type][{"1d": 0, "batched": 1}.get(name, 2)]
    return function, {**axes, **kwargs}


def _operand(fft_type, shape, precision, rng):
    complex_input = fft_type != "R2C"
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_input else 0)
    return x.astype(DTYPES[precision, complex_input])


def scale_load(data, offset, factor, smem):
    return data[offset] * factor[offset]


def scale_store(data, offset, value, factor, smem):
    data[offset] = value * factor[offset]


@pytest.mark.parametrize("fft_type", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prolog_and_epilog_with_user_data(fft_type, precision, case, rng):
    torch = _torch()
    x = _operand(fft_type, case[2], precision, rng)
    function, kwargs = _call(fft_type, case, x)
    real = np.float32 if precision == "single" else np.float64
    load_factor = rng.uniform(0.5, 2.0, x.shape).astype(real)  # the operand's layout: offset indexes both
    loaded = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64) * load_factor
    spectrum = getattr(np.fft, function)(loaded, **kwargs)
    store_factor = rng.uniform(0.5, 2.0, spectrum.shape).astype(real)  # the result's (C-contiguous) layout
    element = {"C2C": x.dtype, "R2C": x.dtype, "C2R": x.dtype}[fft_type].name
    out_element = np.dtype(real).name if fft_type == "C2R" else np.dtype(np.result_type(real, np.complex64)).name
    prolog = nfft.compile_prolog(scale_load, element_dtype=element, user_info_dtype=real)
    epilog = nfft.compile_epilog(scale_store, element_dtype=out_element, user_info_dtype=real)
    overwrite = fft_type == "C2R"  # cuFFT's C2R reads its input directly only when it may overwrite it
    tx = torch.from_numpy(x).cuda()
    result = getattr(nfft, function)(tx, overwrite_x=overwrite, prolog=(prolog, torch.from_numpy(load_factor).cuda()),
                                     epilog=(epilog, torch.from_numpy(store_factor).cuda()), **kwargs)
    assert _error(result.cpu().numpy(), spectrum * store_factor) < TOLERANCE[precision]


def test_same_function_other_user_data_and_distinct_plans(rng):
    torch = _torch()
    nfft.plan_cache.clear()
    x = rng.standard_normal((32, 256)).astype(np.float32)
    tx = torch.from_numpy(x).cuda()
    prolog = nfft.compile_prolog(scale_load, element_dtype="float32", user_info_dtype="float32")
    plain = nfft.rfft(tx)
    windows = [rng.uniform(0, 1, x.shape).astype(np.float32) for _ in range(2)]
    results = [nfft.rfft(tx, prolog=(prolog, torch.from_numpy(w).cuda())) for w in windows]
    assert nfft.plan_cache.info().size == 3  # no sharing between the plain plan and callback plans
    assert _error(plain.cpu().numpy(), np.fft.rfft(x.astype(np.float64))) < 2e-6
    for result, window in zip(results, windows):
        assert _error(result.cpu().numpy(), np.fft.rfft(x.astype(np.float64) * window)) < 2e-6


def test_stateful_plan_reads_the_user_data_at_every_execution(rng):
    torch = _torch()
    x = rng.standard_normal((16, 128)) + 1j * rng.standard_normal((16, 128))
    tx = torch.from_numpy(x).cuda()
    h = torch.ones(x.shape, dtype=torch.float64, device="cuda")
    epilog = nfft.compile_epilog(scale_store, element_dtype="complex128", user_info_dtype="float64")
    with nfft.FFT(tx, axes=[1]) as plan:
        plan.plan(epilog=(epilog, h))
        assert _error(plan.execute().cpu().numpy(), np.fft.fft(x, axis=1)) < 1e-12
        h.fill_(0.25)
        assert _error(plan.execute().cpu().numpy(), 0.25 * np.fft.fft(x, axis=1)) < 1e-12


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fft2", "ifftn", "rfftn", "irfft2"])
@pytest.mark.parametrize("norm", ["ortho", "forward"])
@pytest.mark.parametrize("precision", ["single", "double"])
def test_fused_norm_equals_the_unfused_result(name, norm, precision, rng):
    torch = _torch()
    inverse = name.startswith("i")
    fft_type = "R2C" if name.startswith("rfft") else ("C2R" if name.startswith("irfft") else "C2C")
    x = _operand(fft_type, (6, 20, 32), precision, rng)
    tx = torch.from_numpy(x).cuda()
    fused = getattr(nfft, name)(tx, norm=norm)
    raw = getattr(nfft, name)(tx, norm="forward" if inverse else "backward")  # unscaled
    last = 62 if fft_type == "C2R" else 32  # a C2R of 32 complex values makes 2 * (32 - 1) points
    n = {1: last, 2: 20 * last, 3: 6 * 20 * last}[1 if name in ("fft", "ifft", "rfft", "irfft") else
                                                   2 if name.endswith("2") else 3]
    factor = 1 / np.sqrt(n) if norm == "ortho" else (1.0 if inverse else 1 / n)
    assert _error(fused.cpu().numpy(), raw.cpu().numpy().astype(np.complex128) * factor) < TOLERANCE[precision]
    reference = getattr(np.fft, name)(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), norm=norm)
    assert _error(fused.cpu().numpy(), reference) < 5 * TOLERANCE[precision]


def test_fused_ortho_makes_one_plan_per_factor(rng, tmp_path):
    from nvmathx.device_api import set_cache_dir

    torch = _torch()
    nfft.plan_cache.clear()
    set_cache_dir(tmp_path)  # an empty disk cache: the default engine scales in cuFFT's store
    try:
        _one_plan_per_factor(torch, rng)
    finally:
        set_cache_dir(None)
        nfft.plan_cache.clear()


def _one_plan_per_factor(torch, rng):
    x = rng.standard_normal((64, 512)) + 1j * rng.standard_normal((64, 512))
    tx = torch.from_numpy(x.astype(np.complex64)).cuda()
    for _ in range(3):
        nfft.fft(tx, norm="ortho")
        nfft.ifft(tx, norm="ortho")
    (key,) = nfft.plan_cache.keys(0)
    transform = nfft.plan_cache.get(0, key)
    assert transform.engine == "cufft"
    assert list(transform.plan._scaled) == [1 / np.sqrt(512)]  # one factor for both directions, tried once
    assert transform.plan._scaled[1 / np.sqrt(512)] is not None, "cuFFT did not link the scale callback"
    assert _error(nfft.fft(tx, norm="ortho").cpu().numpy(), np.fft.fft(x.astype(np.complex64), norm="ortho")) < 2e-6
