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
