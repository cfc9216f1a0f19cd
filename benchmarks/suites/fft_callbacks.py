"""cuFFT callbacks suite: work fused into cuFFT's loads and stores against the same work as a pass of
its own.

- ``windowed_rfft_16384x4096_f32``: an rfft of windowed rows, the window applied by a load callback
  (nvmathx: the default engine, which runs callbacks in the fused kernel where the transform fits
  it) against ``torch.fft.rfft(x * window)``; ``nvmathx_cufft_callback``: the same callback linked
  into cuFFT's plan (``FFTOptions(engine="cufft")``); ``nvmathx_plain_rfft`` is the unwindowed rfft
  (cuFFT), the floor the fused one can reach; ``nvmathx_fused_engine``: the callback called by an
  ``FFTOptions(engine="fused")`` plan passed to the function.
- ``c2c_16384x4096_ortho_fused`` and ``c2c_16384x4096_backward``: ``norm="ortho"`` through the built-in
  scale store callback, and the unscaled transform, timed together (``nvmathx_backward`` column) and
  as a case of its own; ``nvmathx_fused_engine``: the same call served by an
  ``FFTOptions(engine="fused")`` plan (one cuFFTDx kernel, the scale in its store).
- ``callback_first_call_warm_cache``: in a fresh process whose disk cache already holds the callback,
  the seconds from ``compile_prolog`` to the first windowed result (compile-or-load, cuFFT's plan with
  its link of the callback, the run); the process's imports and CUDA start-up come before the clock.
  ``nvmathx_no_callback`` is the same first call of a plain rfft.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks import Case, bandwidth, import_or_skip

__all__ = ["cases"]



def windowed(data, offset, window, smem):
    """The load callback: each sample times the window at its position in the row (4096 points)."""
    return data[offset] * window[offset % 4096]


def _windowed_case(ctx, rows) -> Case:
    shape = (rows, 4096)
    nbytes = rows * 4096 * 4 + rows * 2049 * 8

    def operands():
        torch = import_or_skip("torch")
        device = f"cuda:{ctx.device_id}"
        return torch.randn(shape, dtype=torch.float32, device=device), torch.hann_window(4096, device=device)

    def nvmathx_fused():
        import nvmathx.fft

        x, window = operands()
        prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
        return lambda: nvmathx.fft.rfft(x, prolog=(prolog, window))

    def nvmathx_plain():
        import nvmathx.fft

        x, _ = operands()
        return lambda: nvmathx.fft.rfft(x)

    def nvmathx_cufft_callback():  # the same callback, linked into cuFFT's plan
        import nvmathx.fft

        x, window = operands()
        prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
        plan = nvmathx.fft.FFT(x, axes=[-1], options={"engine": "cufft"})
        plan.plan(prolog=(prolog, window))
        return lambda: nvmathx.fft.rfft(x, plan=plan, prolog=(prolog, window))

    def nvmathx_fused_engine():  # the same callback, called by the fused engine's kernel
        import nvmathx.fft

        x, window = operands()
        prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
        plan = nvmathx.fft.FFT(x, axes=[-1], options={"engine": "fused"})
        plan.plan(prolog=(prolog, window))
        return lambda: nvmathx.fft.rfft(x, plan=plan, prolog=(prolog, window))

    def torch_windowed():
        torch = import_or_skip("torch")
        x, window = operands()
        return lambda: torch.fft.rfft(x * window)

    return Case(name=f"windowed_rfft_{rows}x4096_f32", unit="ms", params={"shape": list(shape), "dtype": "float32"},
                setups={"nvmathx": nvmathx_fused, "torch": torch_windowed, "nvmathx_plain_rfft": nvmathx_plain,
                        "nvmathx_cufft_callback": nvmathx_cufft_callback, "nvmathx_fused_engine": nvmathx_fused_engine},
                derive=bandwidth(nbytes), warmup=5, repeats=30,
                note="window on load (nvmathx, default engine) vs torch.fft.rfft(x * window); nvmathx_cufft_callback: "
                     "the window in cuFFT's plan; nvmathx_plain_rfft: no window; nvmathx_fused_engine: the window "
                     "callback in FFTOptions(engine='fused')'s kernel")


def _c2c_cases(ctx, rows) -> list[Case]:
    shape = (rows, 4096)
    nbytes = 2 * rows * 4096 * 8

    def operand():
        torch = import_or_skip("torch")
        return torch.randn(shape, dtype=torch.complex64, device=f"cuda:{ctx.device_id}")

    def nvmathx_setup(norm, warm=False):
        def setup():
            import nvmathx.fft

            x = operand()
            if warm:  # the default engine takes the fused kernel once it is in the disk cache
                nvmathx.fft.FFT(x, axes=[-1], options={"engine": "fused"}).plan()
            return lambda: nvmathx.fft.fft(x, norm=norm)
        return setup

    def cufft_setup(norm):
        def setup():  # cuFFT's engine (FFTOptions(engine="cufft")) serving the function form
            import nvmathx.fft

            x = operand()
            plan = nvmathx.fft.FFT(x, axes=[-1], options={"engine": "cufft"})
            plan.plan()
            return lambda: nvmathx.fft.fft(x, norm=norm, plan=plan)
        return setup

    def fused_setup(norm):
        def setup():  # the fused engine (FFTOptions(engine="fused")) serving the function form
            import nvmathx.fft

            x = operand()
            plan = nvmathx.fft.FFT(x, axes=[-1], options={"engine": "fused"})
            plan.plan()
            return lambda: nvmathx.fft.fft(x, norm=norm, plan=plan)
        return setup

    def torch_setup(norm):
        def setup():
            torch = import_or_skip("torch")
            x = operand()
            return lambda: torch.fft.fft(x, norm=norm)
        return setup

    def cupy_setup(norm):
        def setup():
            cupy = import_or_skip("cupy")
            with cupy.cuda.Device(ctx.device_id):
                x = (cupy.random.standard_normal(shape, dtype=cupy.float32)
                     + 1j * cupy.random.standard_normal(shape, dtype=cupy.float32)).astype(cupy.complex64)
            return lambda: cupy.fft.fft(x, norm=norm)
        return setup

    params = {"shape": list(shape), "dtype": "complex64", "transform": "C2C 1-D"}
    return [
        Case(name=f"c2c_{rows}x4096_ortho_fused", unit="ms", params={**params, "norm": "ortho"},
             setups={"nvmathx": nvmathx_setup("ortho", warm=True), "torch": torch_setup("ortho"),
                     "cupy": cupy_setup("ortho"), "nvmathx_backward": nvmathx_setup("backward"),
                     "nvmathx_cufft": cufft_setup("ortho"), "nvmathx_fused_engine": fused_setup("ortho")},
             derive=bandwidth(nbytes), warmup=5, repeats=30,
             note="nvmathx: the default engine with the fused kernel in the disk cache (its setup plans "
                  "an engine='fused' FFT once, as any earlier use would leave it); nvmathx_cufft: cuFFT's engine "
                  "(built-in scale callback); nvmathx_backward: unscaled, same run; nvmathx_fused_engine: "
                  "FFTOptions(engine='fused'), one cuFFTDx kernel with the scale in its store"),
        Case(name=f"c2c_{rows}x4096_backward", unit="ms", params={**params, "norm": "backward"},
             setups={"nvmathx": nvmathx_setup("backward"), "torch": torch_setup("backward"),
                     "cupy": cupy_setup("backward"), "nvmathx_fused_engine": fused_setup("backward")},
             derive=bandwidth(nbytes), warmup=5, repeats=30),
    ]


_FIRST_CALL = r"""
import sys, time
import torch
import nvmathx.fft
from benchmarks.suites.fft_callbacks import windowed

x = torch.randn(1024, 4096, device="cuda:{device}")
window = torch.hann_window(4096, device="cuda:{device}")
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()
if {callback}:
    prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
    y = nvmathx.fft.rfft(x, prolog=(prolog, window))
else:
    y = nvmathx.fft.rfft(x)
torch.cuda.synchronize()
print("done", flush=True)
"""


def _first_call_case(ctx) -> Case:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def started(callback: bool):
        script = _FIRST_CALL.format(device=ctx.device_id, callback=callback)
        process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, env=env, cwd=root)
        if process.stdout.readline().strip() != "ready":
            process.kill()
            raise RuntimeError("the benchmark process did not start")

        def first_call():
            process.stdin.write("go\n")
            process.stdin.flush()
            line = process.stdout.readline().strip()
            process.wait(timeout=120)
            if line != "done":
                raise RuntimeError(f"the benchmark process failed (exit status {process.returncode})")
        return first_call

    def setup(callback: bool):
        def make():
            import_or_skip("torch")
            warm = started(callback)  # a whole run fills the disk cache first
            warm()
            return [started(callback) for _ in range(3)]  # one fresh process per timed repeat
        return make

    return Case(name="callback_first_call_warm_cache", unit="s", params={"shape": [1024, 4096], "dtype": "float32"},
                setups={"nvmathx": setup(True), "nvmathx_no_callback": setup(False)}, repeats=3,
                note="fresh process, warm disk cache: compile_prolog (a cache hit) + plan with the callback + first "
                     "rfft, after imports and CUDA start-up; nvmathx_no_callback: the same first call without one")


def cases(ctx) -> list[Case]:
    rows = 1024 if ctx.quick else 16384
    return [_windowed_case(ctx, rows), *_c2c_cases(ctx, rows), _first_call_case(ctx)]
