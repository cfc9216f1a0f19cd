"""FFT suite: nvmathx.fft against torch.fft, cupy.fft and nvmath-python.

- ``overhead_*_256_c64``: host microseconds per call of a 256-point complex64 FFT in a loop, for
  the stateful ``FFT.execute()`` and for the function ``nvmathx.fft.fft`` (a plan-cache hit).
- ``c2c_*``, ``r2c_*``: GPU time of large transforms through the function forms, with TB/s counted
  as one read of the operand plus one write of the result (the H200's copy ceiling is about
  4.25 TB/s, see the smoke suite's ``copy_1GiB_d2d``).
- ``c2c_16384x4096_ortho``: ``norm="ortho"``, which nvmathx's default engine applies in the store
  of the fused cuFFTDx kernel once that kernel is in the disk cache (the column's setup plans an
  ``engine="fused"`` FFT once to put it there), else in cuFFT's store through its built-in scale
  callback (no extra pass either way; torch and CuPy add one), with the ``nvmathx_backward``
  column giving the unscaled time in the same run.
"""

from __future__ import annotations

from benchmarks import Case, bandwidth, import_or_skip

__all__ = ["cases"]



def _torch_operand(ctx, shape, real=False):
    torch = import_or_skip("torch")
    device = f"cuda:{ctx.device_id}"
    if real:
        return torch.randn(shape, dtype=torch.float32, device=device)
    return torch.randn(shape, dtype=torch.complex64, device=device)


def _cupy_operand(ctx, shape, real=False):
    cupy = import_or_skip("cupy")
    with cupy.cuda.Device(ctx.device_id):
        x = cupy.random.standard_normal(shape, dtype=cupy.float32)
        return x if real else (x + 1j * cupy.random.standard_normal(shape, dtype=cupy.float32)).astype(cupy.complex64)


# -- per-call overhead ---------------------------------------------------------------------------


def _overhead_cases(ctx) -> list[Case]:
    shape = (256,)

    def nvmathx_stateful():
        import nvmathx.fft

        x = _torch_operand(ctx, shape)
        plan = nvmathx.fft.FFT(x)
        plan.plan()
        return plan.execute

    def nvmathx_function():
        import nvmathx.fft

        x = _torch_operand(ctx, shape)
        return lambda: nvmathx.fft.fft(x)

    def torch_fft():
        torch = import_or_skip("torch")
        x = _torch_operand(ctx, shape)
        return lambda: torch.fft.fft(x)

    def cupy_fft():
        cupy = import_or_skip("cupy")
        x = _cupy_operand(ctx, shape)
        return lambda: cupy.fft.fft(x)

    def nvmath_stateful():
        nvmath_fft = import_or_skip("nvmath.fft")
        x = _torch_operand(ctx, shape)
        plan = nvmath_fft.FFT(x)
        plan.plan()
        return plan.execute

    def nvmath_function():
        nvmath_fft = import_or_skip("nvmath.fft")
        x = _torch_operand(ctx, shape)
        return lambda: nvmath_fft.fft(x)

    params = {"shape": list(shape), "dtype": "complex64", "operand": "torch"}
    common = {"torch": torch_fft, "cupy": cupy_fft}
    return [
        Case(name="overhead_stateful_256_c64", unit="us_per_call", params=params,
             setups={"nvmathx": nvmathx_stateful, **common, "nvmath-python": nvmath_stateful},
             note="nvmathx and nvmath-python: FFT(x).plan() once, then execute() per call; torch/cupy: fft(x)"),
        Case(name="overhead_function_256_c64", unit="us_per_call", params=params,
             setups={"nvmathx": nvmathx_function, **common, "nvmath-python": nvmath_function},
             note="every column calls its library's fft(x) function"),
    ]


# -- large transforms -----------------------------------------------------------------------------


def _transform_case(ctx, name, shape, *, real=False, norm=None, dims=1, note=""):
    """Batched transforms along the last ``dims`` axes (1: ``fft``/``rfft``, else ``fftn`` of all)."""
    elements = 1
    for extent in shape:
        elements *= extent
    if real:
        out_elements = elements // shape[-1] * (shape[-1] // 2 + 1)
        nbytes = elements * 4 + out_elements * 8
    else:
        nbytes = 2 * elements * 8
    kwargs = {} if norm is None else {"norm": norm}

    def call(module, x):
        if real:
            return lambda: module.rfft(x, **kwargs)
        if dims == 1:
            return lambda: module.fft(x, **kwargs)
        return lambda: module.fftn(x, **kwargs)

    def nvmathx_setup(**extra):
        def setup():
            import nvmathx.fft

            x = _torch_operand(ctx, shape, real)
            if extra.get("norm", "backward") != "backward" and dims == 1:  # the fused kernel, in the disk cache
                nvmathx.fft.FFT(x, axes=[-1], options={"engine": "fused"}).plan()
            if real:
                return lambda: nvmathx.fft.rfft(x, **extra)
            function = nvmathx.fft.fft if dims == 1 else nvmathx.fft.fftn
            return lambda: function(x, **extra)
        return setup

    def torch_setup():
        torch = import_or_skip("torch")
        return call(torch.fft, _torch_operand(ctx, shape, real))

    def cupy_setup():
        cupy = import_or_skip("cupy")
        return call(cupy.fft, _cupy_operand(ctx, shape, real))

    def nvmath_setup():
        nvmath_fft = import_or_skip("nvmath.fft")
        x = _torch_operand(ctx, shape, real)
        if real:
            return lambda: nvmath_fft.rfft(x)
        plan = nvmath_fft.FFT(x, axes=list(range(len(shape) - dims, len(shape))))
        plan.plan()
        return plan.execute

    setups = {"nvmathx": nvmathx_setup(**kwargs), "torch": torch_setup, "cupy": cupy_setup}
    if norm is None:
        setups["nvmath-python"] = nvmath_setup
    else:
        setups["nvmathx_backward"] = nvmathx_setup()
    params = {"shape": list(shape), "dtype": "float32" if real else "complex64", "norm": norm or "backward",
              "transform": "R2C" if real else f"C2C {dims}-D"}
    return Case(name=name, unit="ms", params=params, setups=setups, derive=bandwidth(nbytes), warmup=5, repeats=30,
                note=note or "TB/s: operand read once plus result written once; copy ceiling about 4.25 TB/s")


def cases(ctx) -> list[Case]:
    scale = 16 if ctx.quick else 1  # --quick divides the batch so everything runs in seconds
    big = (16384 // scale, 4096)
    result = _overhead_cases(ctx)
    result += [
        _transform_case(ctx, "c2c_16384x4096", big),
        _transform_case(ctx, "c2c_65536x256", (65536 // scale, 256)),
        _transform_case(ctx, "c2c_1048576x64", (1048576 // scale, 64)),
        _transform_case(ctx, "c2c_1d_2p27", (2 ** (27 if not ctx.quick else 20),)),
        _transform_case(ctx, "c2c_3d_512", (512 // (4 if ctx.quick else 1),) * 3, dims=3),
        _transform_case(ctx, "r2c_16384x4096", big, real=True),
        _transform_case(ctx, "c2c_16384x4096_ortho", big, norm="ortho",
                        note="norm='ortho': nvmathx scales in the store of the fused kernel (put in the disk cache by "
                             "the setup), torch and CuPy with an extra pass; nvmathx_backward is the same transform "
                             "unscaled, in the same run"),
    ]
    return result
