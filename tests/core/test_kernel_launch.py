"""The launch path of nvmathx's own NVRTC kernels (nvmathx._codegen.launch), without a GPU: a
recording stand-in for cuda.core."""

import types

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
    monkeypatch.setattr(launch_module, "_configs", {})
    return recording


@pytest.mark.parametrize("handle, expected", [(0, "LEGACY_DEFAULT_STREAM"), (1, "LEGACY_DEFAULT_STREAM"),
                                              (2, "PER_THREAD_DEFAULT_STREAM")])
def test_special_handles_map_to_cuda_core_default_streams(core, handle, expected):
    assert launch_module.core_stream(StreamHolder(handle, 0)) is getattr(core, expected)


def test_other_handles_use_the_holders_stream(core):
    own = object()
    assert launch_module.core_stream(StreamHolder(0x1234, 0, core=own)) is own


def test_configs_are_made_once_per_grid_and_grids_cover_the_elements(core, rng):
    counts = [int(c) for c in rng.integers(1, 1 << 22, size=5)]
    for count in counts + counts:
        launch_module.launch(StreamHolder(0, 0), "kernel", count, count, 7)
    assert core.configs_made == len({launch_module.grid(count) for count in counts})
    assert len(core.launches) == 2 * len(counts)
    for (stream, config, kernel, args), count in zip(core.launches, counts + counts):
        assert stream is core.LEGACY_DEFAULT_STREAM and kernel == "kernel" and args == (count, 7)
        assert config.block == launch_module.BLOCK
        assert config.grid == launch_module.grid(count)
        assert min(count, 65535 * 8 * launch_module.BLOCK) <= config.grid * launch_module.BLOCK


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
        return f"kernel {name}"


@pytest.fixture
def hopper(monkeypatch):
    from nvmathx._codegen import launch

    monkeypatch.setattr(launch.device, "ensure_device", lambda device_id: types.SimpleNamespace(
        compute_capability=(9, 0)))


def test_a_cached_image_the_driver_refuses_is_compiled_again(hopper, monkeypatch):
    from nvmathx._codegen.launch import KernelSet

    kernel_set = KernelSet(SOURCE, ("fill<1>",))
    built = []

    def build(arch, use_cache):
        built.append((arch, use_cache))
        return _Module(loads=not use_cache), use_cache  # the cached image fails to load

    monkeypatch.setattr(kernel_set, "_build", build)
    assert kernel_set.kernel(0, "fill<1>") == "kernel fill<1>"
    assert built == [("sm_90", True), ("sm_90", False)]
    assert kernel_set.kernel(0, "fill<1>") == "kernel fill<1>" and len(built) == 2  # kept


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
