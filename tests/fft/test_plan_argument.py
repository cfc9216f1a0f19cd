"""The functions' ``plan=`` argument: one check on every execution space. A plan made for the call's
problem serves it; a freed plan raises InvalidStateError; a plan made for another problem (shape,
dtype, axes, lengths, transform type, execution space) raises OperandError naming ``plan``. Run on
the CPU space, on the GPU code path (the host stand-in of ``_fake_device.py``) and on a real GPU."""

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import relative_error
from nvmathx import InvalidStateError, OperandError

from ._fake_device import install, to_device, to_host

SPACES = ["cpu", "fake-gpu", pytest.param("gpu", marks=pytest.mark.gpu)]
DEVICE_SPACES = ["fake-gpu", pytest.param("gpu", marks=pytest.mark.gpu)]


@pytest.fixture
def space(request, monkeypatch):
    nfft.plan_cache.clear()
    if request.param == "fake-gpu":
        install(monkeypatch)
    yield request.param
    nfft.plan_cache.clear()


def _on(space, host):
    """``host`` as an array of ``space``."""
    if space == "cpu":
        return host
    if space == "fake-gpu":
        return to_device(host)
    try:
        import cupy
    except ImportError:
        from helpers.torch_cuda import torch_with_cuda

        return torch_with_cuda().from_numpy(np.ascontiguousarray(host)).cuda()
    return cupy.asarray(host)


def _numpy(space, array):
    if space == "cpu":
        return array
    if space == "fake-gpu":
        return to_host(array)
    return array.get() if hasattr(array, "get") else array.cpu().numpy()


def _operands(rng):
    real = rng.standard_normal((4, 8))
    return real, real + 1j * rng.standard_normal((4, 8))


# -- a plan made for the problem serves it --------------------------------------------------------------

SERVED = {  # function -> (operand "real"/"complex", FFT keyword arguments)
    "fft": ("complex", {"axes": [-1]}),
    "ifft": ("complex", {"axes": [-1]}),
    "fft2": ("complex", {}),
    "ifftn": ("complex", {}),
    "rfft": ("real", {"axes": [-1]}),
    "ihfft": ("real", {"axes": [-1]}),
    "irfft": ("complex", {"axes": [-1], "options": {"fft_type": "C2R"}}),
    "hfft": ("complex", {"axes": [-1], "options": {"fft_type": "C2R"}}),
    "irfftn": ("complex", {"options": {"fft_type": "C2R"}}),
}


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", sorted(SERVED))
@pytest.mark.parametrize("planned", [True, False], ids=["planned", "unplanned"])
def test_a_plan_made_for_the_problem_serves_it(space, rng, name, planned):
    real, complex_ = _operands(rng)
    which, kwargs = SERVED[name]
    host = real if which == "real" else complex_
    x = _on(space, host)
    with nfft.FFT(x, **kwargs) as plan:
        if planned:
            plan.plan()
        for norm in (None, "ortho"):
            got = _numpy(space, getattr(nfft, name)(x, norm=norm, plan=plan))
            assert relative_error(got, getattr(scipy.fft, name)(host, norm=norm)) < 1e-12


# -- a freed plan -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "rfft"])
def test_a_freed_plan_raises_invalid_state(space, rng, name):
    real, complex_ = _operands(rng)
    x = _on(space, real if name == "rfft" else complex_)
    plan = nfft.FFT(x, axes=None if name == "fftn" else [-1])
    plan.plan()
    plan.free()
    with pytest.raises(InvalidStateError, match="freed"):
        getattr(nfft, name)(x, plan=plan)


# -- a plan made for another problem -----------------------------------------------------------------------

MISMATCHED = {  # label -> (plan from the operands, the call given the plan, the field the message names)
    "another shape": (lambda o: nfft.FFT(o(np.ones((4, 4), complex)), axes=[-1]),
                      lambda o, plan: nfft.fft(o.x, plan=plan), "shape"),
    "another dtype": (lambda o: nfft.FFT(o(o.host.astype(np.complex64)), axes=[-1]),
                      lambda o, plan: nfft.fft(o.x, plan=plan), "dtype"),
    "other axes": (lambda o: nfft.FFT(o.x, axes=[0]), lambda o, plan: nfft.fft(o.x, plan=plan), "axes"),
    "other axes of fftn": (lambda o: nfft.FFT(o.x), lambda o, plan: nfft.fftn(o.x, axes=[1, 0], plan=plan), "axes"),
    "another length": (lambda o: nfft.FFT(o.x, axes=[-1]), lambda o, plan: nfft.fft(o.x, n=16, plan=plan),
                       "lengths"),
    "an R2C plan for ifft": (lambda o: nfft.FFT(o.r, axes=[-1]), lambda o, plan: nfft.ifft(o.x, plan=plan),
                             "fft type"),
    "a C2C plan for irfft": (lambda o: nfft.FFT(o.x, axes=[-1]), lambda o, plan: nfft.irfft(o.x, plan=plan),
                             "fft type"),
    "a C2R plan for rfft": (lambda o: nfft.FFT(o.x, axes=[-1], options={"fft_type": "C2R"}),
                            lambda o, plan: nfft.rfft(o.r, plan=plan), "fft type"),
    "a C2R plan for fft": (lambda o: nfft.FFT(o.x, axes=[-1], options={"fft_type": "C2R"}),
                           lambda o, plan: nfft.fft(o.x, plan=plan), "fft type"),
    "a plan for fftn over no axis": (lambda o: nfft.FFT(o.x), lambda o, plan: nfft.fftn(o.x, axes=[], plan=plan),
                                     "axes"),
}


class _Operands:
    """A complex ``x`` (4x8, ``host`` on the host) and a real ``r`` of one space; called, any host array."""

    def __init__(self, space, rng):
        self.space = space
        real, self.host = _operands(rng)
        self.x, self.r = _on(space, self.host), _on(space, real)

    def __call__(self, host):
        return _on(self.space, host)


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("case", sorted(MISMATCHED))
def test_a_plan_for_another_problem_names_plan(space, rng, case):
    make_plan, call, field = MISMATCHED[case]
    operands = _Operands(space, rng)
    with make_plan(operands) as plan:
        with pytest.raises(OperandError, match=f"^plan: was made for {field} ") as info:
            call(operands, plan)
        assert info.value.argument == "plan"


# -- a plan of the other execution space --------------------------------------------------------------------


@pytest.mark.parametrize("space", DEVICE_SPACES, indirect=True)
def test_a_cpu_plan_for_a_gpu_call_and_the_reverse(space, rng):
    _, host = _operands(rng)
    device = _on(space, host)
    with nfft.FFT(host, axes=[-1]) as cpu_plan:
        with pytest.raises(OperandError, match="^plan: was made for the CPU, but fft of this operand runs on GPU"):
            nfft.fft(device, plan=cpu_plan)
    with nfft.FFT(device, axes=[-1]) as gpu_plan:
        with pytest.raises(OperandError, match="^plan: was made for GPU 0, but fft of this operand runs on the CPU"):
            nfft.fft(host, plan=gpu_plan)
    # A host operand run on CUDA: the plan is a GPU plan, however it was fed.
    with nfft.FFT(host, axes=[-1], execution="cuda") as staged_plan:
        with pytest.raises(OperandError, match="^plan: was made for GPU 0, but fft of this operand runs on the CPU"):
            nfft.fft(host, plan=staged_plan)
