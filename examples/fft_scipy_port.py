"""Porting scipy.fft code to nvmathx: change the import, or keep scipy and set nvmathx as its backend.

Runs on any machine: numpy arrays run on the CPU (through scipy.fft); with cupy and a GPU the same
calls run on cuFFT. Exits with status 0 when every result matches numpy.
"""

import numpy as np
import scipy.fft

import nvmathx.fft as fft  # was: import scipy.fft as fft


def spectrum_peak(signal, sample_spacing):
    """The frequency of the strongest component of a real signal (scipy.fft style code)."""
    spectrum = fft.rfft(signal, norm="ortho")
    frequencies = fft.rfftfreq(signal.shape[-1], sample_spacing)
    return frequencies[int(np.argmax(np.abs(spectrum)))]


def main():
    t = np.arange(4096) / 1000.0
    signal = np.sin(2 * np.pi * 50.0 * t) + 0.5 * np.sin(2 * np.pi * 120.0 * t)
    peak = spectrum_peak(signal, 1e-3)
    assert abs(peak - 50.0) < 0.5, peak

    x = np.random.default_rng(0).standard_normal((8, 64)) + 1j
    assert np.allclose(fft.ifft2(fft.fft2(x)), x)

    # Existing scipy code, served by nvmathx for GPU arrays and by scipy for host arrays.
    with scipy.fft.set_backend(fft):
        assert np.allclose(scipy.fft.fftn(x), np.fft.fftn(x))
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        print("no cupy GPU here: the host path was checked; the cuFFT path did not run")
    else:
        with scipy.fft.set_backend(fft):
            device_result = scipy.fft.fftn(cupy.asarray(x))
        assert np.allclose(cupy.asnumpy(device_result), np.fft.fftn(x))
        print("cupy array served by nvmathx through scipy.fft")
    print("peak at", peak, "Hz: ok")


if __name__ == "__main__":
    main()
