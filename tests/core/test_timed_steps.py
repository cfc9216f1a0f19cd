"""Steps that can take over a second log at INFO when they start and when they end, with the time."""

import logging

import pytest

from nvmathx._core.logs import timed_step


def test_a_step_logs_its_start_and_its_duration(caplog):
    with caplog.at_level(logging.INFO, logger="nvmathx"), timed_step("generating things"):
        pass
    assert [record.getMessage().split(" in ")[0] for record in caplog.records] == [
        "generating things: started", "generating things: done"]
    assert caplog.records[1].getMessage().endswith(" s")


def test_a_failed_step_says_so_and_raises(caplog):
    with caplog.at_level(logging.INFO, logger="nvmathx"), pytest.raises(KeyError):
        with timed_step("linking"):
            raise KeyError("x")
    assert caplog.records[-1].getMessage().startswith("linking: failed after ")


def test_an_nvrtc_compile_is_logged_when_it_runs_and_not_when_cached(caplog, tmp_path):
    pytest.importorskip("cuda.core")
    from nvmathx._codegen import cache, nvrtc

    cache.set_cache_dir(tmp_path)
    try:
        source = 'extern "C" __device__ int nvmathx_probe_add(int a, int b) { return a + b; }'
        key = {"kind": "test-timed-step", "source": source}
        with caplog.at_level(logging.INFO, logger="nvmathx"):
            try:
                nvrtc.cached_ltoir(key, "nvmathx_probe_add", source, "sm_90")
            except Exception as error:  # no NVRTC library on this machine
                pytest.skip(f"NVRTC unavailable: {error}")
            messages = [record.getMessage() for record in caplog.records]
            assert any(m.startswith("NVRTC compile of nvmathx_probe_add for sm_90: done in") for m in messages)
            caplog.clear()
            nvrtc.cached_ltoir(key, "nvmathx_probe_add", source, "sm_90")
        assert not [r for r in caplog.records if "NVRTC compile" in r.getMessage()]
    finally:
        cache.set_cache_dir(None)
