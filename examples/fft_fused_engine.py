"""The fused FFT engine: one generated kernel loads each row, applies the window (a load callback),
transforms it with cuFFTDx, scales it (norm="ortho") and stores it, in one pass over memory.

``FFTOptions(engine="fused")`` asks for it; the stateful plan then serves the function form, which
passes the norm and the same callback. The first run generates and links the kernels (seconds);
later runs, in this process or another, read them from the disk cache. With a GPU the result is
checked against numpy; without one the kernel is only generated and linked, for an H100/H200
(sm_90), and the script exits with status 77: nothing was checked. Prints "ok" when the check passed.
"""

import sys

import numpy as np

import nvmathx.fft

SKIPPED = 77  # the exit status of an example that could not run its check (automake's convention)

N = 2048  # points per row


def windowed(data, offset, window, smem):
    # offset counts elements from the operand's start; the rows are contiguous, so offset % N is the
    # position in the row.
    return data[offset] * window[offset % N]


def main():
    from nvmathx._bindings.cuda_driver import driver_available

    if not driver_available():
        return _generate_only()
    import torch

    rng = np.random.default_rng(0)
    signal = rng.standard_normal((512, N)).astype(np.float32)
    window = np.hanning(N).astype(np.float32)
    x, w = torch.from_numpy(signal).cuda(), torch.from_numpy(window).cuda()
    prolog = (nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32"), w)
    with nvmathx.fft.FFT(x, axes=[-1], options={"engine": "fused"}) as plan:
        plan.plan(prolog=prolog)
        spectrum = nvmathx.fft.rfft(x, norm="ortho", plan=plan, prolog=prolog)
        engine = plan.engine
    expected = np.fft.rfft(signal.astype(np.float64) * window, norm="ortho")
    error = np.linalg.norm(spectrum.cpu().numpy() - expected) / np.linalg.norm(expected)
    assert error < 1e-5, error
    print(f"windowed, normalised rfft of {tuple(x.shape)} by the {engine} engine, relative error {error:.1e}: ok")
    return 0


def _generate_only():
    """Without a GPU: generate and link the fused kernel for sm_90 (libmathdx, NVRTC and nvJitLink
    need no GPU), then report that nothing was checked."""
    try:
        from nvmathx._codegen import fused_fft
        from nvmathx.device_api import FFT

        kernel = fused_fft.fused_kernel(FFT(N, np.float32, fft_type="r2c", sm=(9, 0)))
    except Exception as error:  # noqa: BLE001 (no libmathdx or NVRTC here: say why and stop)
        print(f"SKIPPED: no GPU and no kernel generation ({type(error).__name__}: {error}); checked nothing")
        return SKIPPED
    print(f"SKIPPED: no GPU; generated and linked {kernel.symbol} ({len(kernel.cubin)} bytes of cubin) "
          "but ran and checked nothing")
    return SKIPPED


if __name__ == "__main__":
    sys.exit(main())
