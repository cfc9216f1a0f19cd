"""FFT convolution with the filter multiplied in by a store callback of the forward transform.

``irfft(rfft(x) * H)`` normally reads and writes the spectrum once more for the multiply; here cuFFT
multiplies each value by the filter as it stores the forward result, and the inverse scales by 1/N
as usual. The filter ``H`` has the spectrum's layout, so ``offset`` indexes both. With a GPU it runs
on cuFFT (torch tensors) and is checked against a direct circular convolution in numpy; without one
the callback is only compiled (sm_90) and the script exits with status 77: nothing was checked. Prints
"ok" when the check passed.
"""

import sys

import numpy as np

import nvmathx.fft

SKIPPED = 77  # the exit status of an example that could not run its check (automake's convention)


def multiply(data, offset, value, h, smem):
    data[offset] = value * h[offset]


def main():
    from nvmathx._bindings.cuda_driver import driver_available

    if not driver_available():
        try:
            epilog = nvmathx.fft.compile_epilog(multiply, element_dtype="complex64", user_info_dtype="complex64",
                                                target="sm_90")
        except nvmathx.fft.CallbackCompileError as error:  # no numba-cuda (a [test]-only install)
            print(f"SKIPPED: no GPU and no callback compiler ({error}); checked nothing")
            return SKIPPED
        print(f"SKIPPED: no GPU; compiled {epilog.symbol} ({len(epilog.ltoir)} bytes of LTO-IR) "
              "but ran and checked nothing")
        return SKIPPED
    import torch

    rng = np.random.default_rng(0)
    batch, n = 64, 2048
    signals = rng.standard_normal((batch, n)).astype(np.float32)
    kernel = np.zeros(n, np.float32)
    kernel[:31] = np.hanning(31)  # a smoothing filter, zero-padded to the signal length
    h = np.broadcast_to(np.fft.rfft(kernel), (batch, n // 2 + 1)).astype(np.complex64)  # the spectrum's layout
    x, h_gpu = torch.from_numpy(signals).cuda(), torch.from_numpy(np.ascontiguousarray(h)).cuda()
    epilog = nvmathx.fft.compile_epilog(multiply, element_dtype="complex64", user_info_dtype="complex64")
    filtered = nvmathx.fft.irfft(nvmathx.fft.rfft(x, epilog=(epilog, h_gpu)), n=n)
    # The reference: the circular convolution computed directly, tap by tap, in float64.
    wide = signals.astype(np.float64)
    expected = sum(float(kernel[k]) * np.roll(wide, k, axis=1) for k in range(31))
    error = np.linalg.norm(filtered.cpu().numpy() - expected) / np.linalg.norm(expected)
    assert error < 1e-5, error
    print(f"convolution of {batch} signals of {n} points, filter in cuFFT's store, relative error {error:.1e}: ok")


if __name__ == "__main__":
    sys.exit(main())
