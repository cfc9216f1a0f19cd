"""Link a CUDA C++ kernel that calls generated device functions with their LTO-IR into an sm_90
cubin with nvJitLink (no GPU needed): any name left unresolved fails the link."""

import pytest


def link_calls(calls, ltoirs, fatbin=None, *, declarations=None, body=None) -> bytes:
    """The sm_90 cubin of a kernel ``caller(void** p)`` calling each ``(symbol, pointer count)`` of
    ``calls`` with ``p[0]``, ``p[1]``, ... (or with ``declarations`` and ``body``, C++ given as they
    are), linked with ``ltoirs`` (and ``fatbin``). AssertionError with nvJitLink's log when it does
    not link; skips where cuda.core or nvJitLink is missing or older than the LTO-IR."""
    core = pytest.importorskip("cuda.core")
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    try:
        nvjitlink.version()
    except Exception as error:  # noqa: BLE001 (no libnvJitLink: several error types)
        pytest.skip(f"nvJitLink is not available ({type(error).__name__})")
    if declarations is None:
        declarations = "".join(f'extern "C" __device__ void {name}({", ".join(["void*"] * count)});\n'
                               for name, count in calls)
        body = "".join(f"    {name}({', '.join(f'p[{i}]' for i in range(count))});\n" for name, count in calls)
    source = f'{declarations}extern "C" __global__ void caller(void** p) {{\n{body}}}\n'
    options = core.ProgramOptions(arch="sm_90", relocatable_device_code=True, link_time_optimization=True)
    caller = bytes(core.Program(source, "c++", options).compile("ltoir").code)
    inputs = [(nvjitlink.InputType.LTOIR, code) for code in [caller, *ltoirs]]
    if fatbin is not None:
        inputs.append((nvjitlink.InputType.FATBIN, fatbin))
    handle = nvjitlink.create(2, ["-arch=sm_90", "-lto"])
    try:
        for index, (kind, code) in enumerate(inputs):
            try:
                nvjitlink.add_data(handle, kind, code, len(code), f"input{index}")
            except nvjitlink.nvJitLinkError as error:
                if "OUTDATED" in str(error):
                    pytest.skip(f"nvJitLink {nvjitlink.version()} is older than libmathdx's NVRTC")
                raise
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as error:
            log = bytearray(nvjitlink.get_error_log_size(handle))
            nvjitlink.get_error_log(handle, log)
            raise AssertionError(f"{error}: {log.decode(errors='replace')}") from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)
