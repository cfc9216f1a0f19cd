"""The launch path of nvmathx's own NVRTC kernels (nvmathx._codegen.launch), without a GPU: a
recording stand-in for cuda.core."""

import struct
import threading
import types

import numpy as np
import pytest

from nvmathx._codegen import launch as launch_module
from nvmathx._core.streams import StreamHolder


class _RecordingCore:
    """cuda.core's launch, LaunchConfig and default streams, recording each launch."""

    LEGACY_DEFAULT_STREAM = object()
    PER_THREAD_DEFAULT_STREAM = object()

    def __init__(self):
        self.launches = []
        self.configs_made = 0

    def LaunchConfig(self, grid, block):  # noqa: N802 (cuda.core's name)
        self.configs_made += 1
        return types.SimpleNamespace(grid=grid, block=block)

    def launch(self, stream, config, kernel, *args):
        self.launches.append((stream, config, kernel, args))


@pytest.fixture
def core(monkeypatch):
    recording = _RecordingCore()
    monkeypatch.setattr(launch_module, "_CUDA_CORE", recording)
    return recording


@pytest.mark.parametrize("handle, expected", [(0, "LEGACY_DEFAULT_STREAM"), (1, "LEGACY_DEFAULT_STREAM"),
                                              (2, "PER_THREAD_DEFAULT_STREAM")])
def test_special_handles_map_to_cuda_core_default_streams(core, handle, expected):
    assert launch_module.core_stream(StreamHolder(handle, 0)) is getattr(core, expected)


def test_other_handles_use_the_holders_stream(core):
    own = object()
    assert launch_module.core_stream(StreamHolder(0x1234, 0, core=own)) is own


class _RecordingLauncher:
    """cuLaunchKernel's stand-in: records each launch and the 8-byte slots its argument pointers
    point at (read through the pointer array, as the driver reads them)."""

    def __init__(self):
        self.launches = []

    def __call__(self, function, blocks, threads, stream_handle, params_address):
        import ctypes

        count = self.expected_count
        pointers = (ctypes.c_void_p * count).from_address(params_address)
        slots = [bytes((ctypes.c_char * 8).from_address(pointer)) for pointer in pointers]
        self.launches.append((function, blocks, threads, stream_handle, slots))


@pytest.fixture
def launcher(monkeypatch):
    recording = _RecordingLauncher()
    monkeypatch.setattr(launch_module, "_LAUNCH", recording)
    monkeypatch.setattr(launch_module, "_local", threading.local())
    return recording


def _kernel(function="function"):
    kernel = launch_module.Kernel.__new__(launch_module.Kernel)
    kernel.core, kernel.function = None, function
    return kernel


def test_arguments_are_packed_one_slot_each_in_the_parameters_formats(launcher, rng):
    """Each argument's bytes as the kernel's parameter holds them (little-endian, 4-byte values in
    the low half of their slot), on the holder's stream, over a grid that covers ``count``."""
    pointer, count = int(rng.integers(1 << 40, 1 << 47)), int(rng.integers(1, 1 << 22))
    scale, flags, mask = np.float32(rng.standard_normal()), np.int32(-int(rng.integers(1, 99))), (1 << 62) + 5
    args = (pointer, count, flags, scale, np.uint64(mask), np.int64(-7), np.uint32(3), np.float64(0.25))
    launcher.expected_count = len(args)
    launch_module.launch(StreamHolder(0x5678, 0), _kernel(), count, *args)
    ((function, blocks, threads, stream_handle, slots),) = launcher.launches
    assert (function, threads, stream_handle) == ("function", launch_module.BLOCK, 0x5678)
    assert blocks == launch_module.grid(count) and min(count, 65535 * 8 * threads) <= blocks * threads
    assert slots[0] == struct.pack("<q", pointer) and slots[1] == struct.pack("<q", count)
    assert slots[2][:4] == struct.pack("<i", int(flags)) and slots[3][:4] == struct.pack("<f", float(scale))
    assert slots[4] == struct.pack("<Q", mask) and slots[5] == struct.pack("<q", -7)
    assert slots[6][:4] == struct.pack("<I", 3) and slots[7] == struct.pack("<d", 0.25)


def test_each_launch_packs_its_own_values(launcher, rng):
    """The buffer is reused per argument types: every launch carries its own values."""
    values = [int(v) for v in rng.integers(0, 1 << 40, size=6)]
    launcher.expected_count = 2
    for value in values:
        launch_module.launch(StreamHolder(3, 0), _kernel(), 100, value, np.float32(value % 97))
    assert [slots[0] for *_, slots in launcher.launches] == [struct.pack("<q", v) for v in values]
    assert [slots[1][:4] for *_, slots in launcher.launches] == [struct.pack("<f", v % 97) for v in values]


def test_threads_pack_into_buffers_of_their_own(launcher):
    packers = []
    worker = threading.Thread(target=lambda: packers.append(launch_module._packer((1, np.int32(2)))))
    worker.start()
    worker.join()
    assert packers[0][1] is not launch_module._packer((1, np.int32(2)))[1]


@pytest.mark.parametrize("bad", [1.5, True, "x", np.float16(1)])
def test_arguments_of_other_types_are_refused(launcher, bad):
    """A Python float (float or double?) or a bool would be packed by guess: refused."""
    with pytest.raises(TypeError, match="numpy scalars"):
        launch_module.launch(StreamHolder(3, 0), _kernel(), 10, 1, bad)
    assert not launcher.launches


SOURCE = "template <int N> __global__ void fill(int* out) { out[threadIdx.x] = N; }\n"


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    from nvmathx._codegen import cache

    monkeypatch.setattr(cache, "_override", str(tmp_path))
    return tmp_path


def _compiled_or_skip(kernel_set, arch="sm_90"):
    try:
        return kernel_set.compile(arch)
    except (ImportError, RuntimeError) as error:
        if "nvrtc" not in str(error).lower() and not isinstance(error, ImportError):
            raise
        pytest.skip(f"NVRTC is not available: {error}")


def _no_nvrtc(*args, **kwargs):
    raise AssertionError("compiled again")


def test_kernel_sets_are_compiled_once_per_machine(cache_folder, monkeypatch):
    """A second process (a new KernelSet of the same source) loads the cubin from the disk cache:
    NVRTC is not called, and the kernels keep their mangled names."""
    import cuda.core

    from nvmathx._codegen.launch import KernelSet

    names = ("fill<1>", "fill<2>")
    first = _compiled_or_skip(KernelSet(SOURCE, names))
    assert set(first.symbol_mapping) == set(names)

    monkeypatch.setattr(cuda.core, "Program", _no_nvrtc)
    again = KernelSet(SOURCE, names).compile("sm_90")
    assert again.code_type == "cubin" and bytes(again.code) == bytes(first.code)
    assert dict(again.symbol_mapping) == dict(first.symbol_mapping)
    for changed in (KernelSet(SOURCE + "// another source\n", names), KernelSet(SOURCE, names[:1])):
        with pytest.raises(AssertionError, match="compiled again"):
            changed.compile("sm_90")
    with pytest.raises(AssertionError, match="compiled again"):
        KernelSet(SOURCE, names).compile("sm_80")


class _Module:
    def __init__(self, loads: bool):
        self.loads = loads

    def get_kernel(self, name):
        if not self.loads:
            raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
        return types.SimpleNamespace(name=f"kernel {name}", handle=name)


@pytest.fixture
def hopper(monkeypatch):
    from nvmathx._codegen import launch

    monkeypatch.setattr(launch.device, "ensure_device", lambda device_id: types.SimpleNamespace(
        compute_capability=(9, 0)))
    monkeypatch.setattr(launch.cuda_driver, "kernel_function", lambda handle: f"function of {handle}")


def test_a_cached_image_the_driver_refuses_is_compiled_again(hopper, monkeypatch):
    from nvmathx._codegen.launch import KernelSet

    kernel_set = KernelSet(SOURCE, ("fill<1>",))
    built = []

    def build(arch, use_cache):
        built.append((arch, use_cache))
        return _Module(loads=not use_cache), use_cache  # the cached image fails to load

    monkeypatch.setattr(kernel_set, "_build", build)
    kernel = kernel_set.kernel(0, "fill<1>")
    assert kernel.core.name == "kernel fill<1>" and kernel.function == "function of fill<1>"
    assert built == [("sm_90", True), ("sm_90", False)]
    assert kernel_set.kernel(0, "fill<1>") is kernel and len(built) == 2  # kept


def test_a_freshly_compiled_image_the_driver_refuses_raises(hopper, monkeypatch):
    from nvmathx._codegen.launch import KernelSet

    kernel_set = KernelSet(SOURCE, ("fill<1>",))
    monkeypatch.setattr(kernel_set, "_build", lambda arch, use_cache: (_Module(loads=False), False))
    with pytest.raises(RuntimeError, match="INVALID_IMAGE"):
        kernel_set.kernel(0, "fill<1>")


def test_the_link_cache_switch_turns_kernel_set_caching_off(cache_folder, monkeypatch):
    import cuda.core

    from nvmathx._codegen import cache
    from nvmathx._codegen.launch import KernelSet

    monkeypatch.setenv("NVMATHX_LINK_CACHE", "0")
    kernel_set = KernelSet(SOURCE, ("fill<3>",))
    _compiled_or_skip(kernel_set)
    assert cache.load_linked(kernel_set.cache_key("sm_90")) is None  # nothing stored
    monkeypatch.setattr(cuda.core, "Program", _no_nvrtc)
    with pytest.raises(AssertionError, match="compiled again"):
        KernelSet(SOURCE, ("fill<3>",)).compile("sm_90")
