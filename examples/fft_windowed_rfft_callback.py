"""A windowed real FFT with the window applied by a load callback: cuFFT multiplies each sample by
the window as it reads it, so windowing costs no pass of its own over memory.

The callback is a Python function compiled once (numba-cuda, LTO-IR, cached on disk) and linked into
the cuFFT plan. With a GPU the transform runs on cuFFT (torch tensors) and is checked against numpy;
without one the callback is only compiled, for an H100/H200 (sm_90), and the script exits with status 77:
nothing was checked. Prints "ok" when the check passed.
"""

import sys

import numpy as np

import nvmathx.fft

SKIPPED = 77  # the exit status of an example that could not run its check (automake's convention)

N = 1024  # points per row


def windowed(data, offset, window, smem):
    # offset counts elements from the operand's start; the rows are contiguous, so offset % N is the
    # position in the row.
    return data[offset] * window[offset % N]


def main():
    from nvmathx._bindings.cuda_driver import driver_available

    if not driver_available():
        try:
            prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32",
                                                target="sm_90")
        except nvmathx.fft.CallbackCompileError as error:  # no numba-cuda (a [test]-only install)
            print(f"SKIPPED: no GPU and no callback compiler ({error}); checked nothing")
            return SKIPPED
        print(f"SKIPPED: no GPU; compiled {prolog.symbol} ({len(prolog.ltoir)} bytes of LTO-IR) "
              "but ran and checked nothing")
        return SKIPPED
    import torch

    rng = np.random.default_rng(0)
    signal = rng.standard_normal((256, N)).astype(np.float32)
    window = np.hanning(N).astype(np.float32)
    x, w = torch.from_numpy(signal).cuda(), torch.from_numpy(window).cuda()
    prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
    spectrum = nvmathx.fft.rfft(x, prolog=(prolog, w))  # the window's pointer becomes user_info
    expected = np.fft.rfft(signal.astype(np.float64) * window, axis=-1)
    error = np.linalg.norm(spectrum.cpu().numpy() - expected) / np.linalg.norm(expected)
    assert error < 1e-5, error
    print(f"windowed rfft of {tuple(x.shape)} on cuFFT, relative error {error:.1e}: ok")


if __name__ == "__main__":
    sys.exit(main())
