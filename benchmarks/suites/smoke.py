"""Smoke suite: proves the runner and measures the foundation's per-call costs.

- ``view_operand_torch`` / ``view_operand_cupy``: host cost of viewing a CUDA array as an
  nvmathx operand, beside each library's cheapest pointer access, cuda.core's
  ``StridedMemoryView`` and nvmath-python's internal ``wrap_operand``.
- ``resolve_stream_torch`` / ``resolve_stream_default``: host cost of turning ``stream=`` (a torch
  stream, or ``None`` with a torch operand) into a handle.
- ``copy_1GiB_d2d``: device-to-device copy bandwidth (nvmathx's staging copy is the driver's
  ``cuMemcpyAsync``), with TB/s counted as bytes read plus bytes written.
- ``import_time``: wall seconds of a fresh interpreter importing each library (the ``python``
  column is the interpreter alone). Host-only, but kept a GPU case so that results written on a
  CPU machine never replace the committed GPU ones.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks import Case, Skip, bandwidth, import_or_skip

__all__ = ["cases"]

_VIEW_SHAPE = (64, 32)
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



def _peer_attribute(module: str, name: str):
    """An internal function of a peer, or :class:`Skip` when this version lacks it."""
    try:
        return getattr(import_or_skip(module), name)
    except AttributeError as error:
        raise Skip(f"{module}.{name} unavailable: {error}") from None


def _torch_tensor(ctx, shape):
    torch = import_or_skip("torch")
    data = ctx.rng.standard_normal(shape).astype("float32")
    return torch.from_numpy(data).to(f"cuda:{ctx.device_id}")


def _cupy_array(ctx, shape):
    cupy = import_or_skip("cupy")
    with cupy.cuda.Device(ctx.device_id):
        return cupy.asarray(ctx.rng.standard_normal(shape).astype("float32"))


def _view_setups(ctx, make, package: str, pointer) -> dict:
    def nvmathx_view():
        from nvmathx._core.tensor import wrap_operand

        x = make(ctx, _VIEW_SHAPE)
        return lambda: wrap_operand(x, "x")

    def native_pointer():
        x = make(ctx, _VIEW_SHAPE)
        return lambda: pointer(x)

    def core_view():
        from cuda.core.utils import StridedMemoryView

        x = make(ctx, _VIEW_SHAPE)
        return lambda: StridedMemoryView.from_any_interface(x, stream_ptr=-1)

    def nvmath_view():
        wrap = _peer_attribute("nvmath.internal.tensor_wrapper", "wrap_operand")
        x = make(ctx, _VIEW_SHAPE)
        return lambda: wrap(x)

    return {"nvmathx": nvmathx_view, package: native_pointer, "cuda.core": core_view, "nvmath-python": nvmath_view}


def _view_cases(ctx) -> list[Case]:
    params = {"shape": list(_VIEW_SHAPE), "dtype": "float32"}
    return [
        Case(
            name="view_operand_torch", unit="us_per_call", params={**params, "package": "torch"},
            setups=_view_setups(ctx, _torch_tensor, "torch", lambda x: x.data_ptr()),
            note="torch column: x.data_ptr(); cuda.core: StridedMemoryView.from_any_interface",
        ),
        Case(
            name="view_operand_cupy", unit="us_per_call", params={**params, "package": "cupy"},
            setups=_view_setups(ctx, _cupy_array, "cupy", lambda x: x.data.ptr),
            note="cupy column: x.data.ptr; cuda.core: StridedMemoryView.from_any_interface",
        ),
    ]


def _stream_setups(ctx, make_stream) -> dict:
    """Columns for resolving ``make_stream()`` (a torch stream, or None for the current one)."""

    def nvmathx_resolve():
        from nvmathx._core.streams import resolve_stream
        from nvmathx._core.tensor import adapter_for

        current = adapter_for(_torch_tensor(ctx, (1,))).current_stream
        stream, device_id = make_stream(), ctx.device_id
        return lambda: resolve_stream(stream, device_id, current)

    def torch_handle():
        torch = import_or_skip("torch")
        stream, device_id = make_stream(), ctx.device_id
        if stream is None:
            return lambda: torch.cuda.current_stream(device_id).cuda_stream
        return lambda: stream.cuda_stream

    def core_from_handle():
        torch = import_or_skip("torch")
        from cuda.core import Stream

        handle = (make_stream() or torch.cuda.current_stream(ctx.device_id)).cuda_stream
        return lambda: Stream.from_handle(handle)

    def nvmath_resolve():
        get_or_create_stream = _peer_attribute("nvmath.internal.utils", "get_or_create_stream")
        stream, device_id = make_stream(), ctx.device_id
        return lambda: get_or_create_stream(device_id, stream, "torch")

    return {"nvmathx": nvmathx_resolve, "torch": torch_handle, "cuda.core": core_from_handle,
            "nvmath-python": nvmath_resolve}


def _stream_cases(ctx) -> list[Case]:
    def torch_stream():
        torch = import_or_skip("torch")
        return torch.cuda.Stream(device=ctx.device_id)

    return [
        Case(
            name="resolve_stream_torch", unit="us_per_call", params={"stream": "torch.cuda.Stream"},
            setups=_stream_setups(ctx, torch_stream),
            note="torch column: s.cuda_stream; cuda.core: Stream.from_handle(handle)",
        ),
        Case(
            name="resolve_stream_default", unit="us_per_call", params={"stream": None, "package": "torch"},
            setups=_stream_setups(ctx, lambda: None),
            note="torch column: torch.cuda.current_stream().cuda_stream; cuda.core: Stream.from_handle(handle)",
        ),
    ]


def _buffers(ctx, nbytes: int):
    """Two cuda.core device buffers of ``nbytes`` (contents do not matter for a copy)."""
    from cuda.core import Device

    device = Device(ctx.device_id)
    return device.allocate(nbytes, stream=ctx.stream), device.allocate(nbytes, stream=ctx.stream)


def _copy_case(ctx) -> Case:
    nbytes = (64 if ctx.quick else 1024) << 20
    label = f"{nbytes >> 30}GiB" if nbytes >= 1 << 30 else f"{nbytes >> 20}MiB"

    def nvmathx_copy():
        from nvmathx._bindings.cuda_driver import memcpy_async

        src, dst = _buffers(ctx, nbytes)
        handle = int(ctx.stream.handle)
        # The lambda reads the pointers from the buffers so that it keeps them alive.
        return lambda: memcpy_async(int(dst.handle), int(src.handle), nbytes, handle)

    def torch_copy():
        torch = import_or_skip("torch")
        src = torch.ones(nbytes, dtype=torch.uint8, device=f"cuda:{ctx.device_id}")
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    def cupy_copy():
        cupy = import_or_skip("cupy")
        with cupy.cuda.Device(ctx.device_id):
            src = cupy.ones(nbytes, dtype=cupy.uint8)
            dst = cupy.empty_like(src)
        return lambda: cupy.copyto(dst, src)

    def core_copy():
        src, dst = _buffers(ctx, nbytes)
        stream = ctx.stream
        return lambda: src.copy_to(dst, stream=stream)

    return Case(
        name=f"copy_{label}_d2d", unit="ms", params={"nbytes": nbytes},
        setups={"nvmathx": nvmathx_copy, "torch": torch_copy, "cupy": cupy_copy, "cuda.core": core_copy},
        derive=bandwidth(2 * nbytes), warmup=3, repeats=20,
        note="nvmathx: cuMemcpyAsync (its staging copy); TB/s counts bytes read plus written",
    )


def _import_setup(statement: str):
    def setup():
        command = [sys.executable, "-c", statement]

        def run():
            subprocess.run(command, cwd=_REPO_ROOT, check=True, capture_output=True)

        return run

    return setup


def _import_case() -> Case:
    modules = {"nvmathx": "nvmathx", "torch": "torch", "cupy": "cupy", "nvmath-python": "nvmath"}
    setups = {library: _import_setup(f"import {module}") for library, module in modules.items()}
    return Case(
        name="import_time", unit="s", params={"fresh_interpreter": True},
        setups={**setups, "python": _import_setup("pass")}, repeats=5,
        note="python column: the interpreter starting with nothing imported",
    )


def cases(ctx) -> list[Case]:
    """The smoke cases for ``ctx`` (see the module docstring)."""
    return [*_view_cases(ctx), *_stream_cases(ctx), _copy_case(ctx), _import_case()]
