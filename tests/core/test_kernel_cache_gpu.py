"""nvmathx's own NVRTC kernels across processes on a real GPU: the first process compiles and stores
the cubin, a second one loads it from the disk cache and its kernels compute the same thing."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import torch
    from nvmathx._codegen import cache
    from nvmathx._codegen.launch import KernelSet, launch
    from nvmathx._core.streams import resolve_stream

    source = ("template <int N> __global__ void affine(float* out, const float* x, long long n) {"
              " for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x)"
              " out[i] = N * x[i] + 1.0f; }")
    kernels = KernelSet(source + "// " + sys.argv[1], ("affine<3>", "affine<5>"))
    x = torch.tensor(json.loads(sys.argv[2]), device="cuda", dtype=torch.float32)
    out = torch.empty_like(x)
    stream = resolve_stream(None, 0, lambda device: torch.cuda.current_stream(device).cuda_stream)
    launch(stream, kernels.kernel(0, "affine<5>"), x.numel(), out.data_ptr(), x.data_ptr(), x.numel())
    from nvmathx.torch._float8.kernels import KERNELS, KERNEL_NAMES
    KERNELS.kernel(0, KERNEL_NAMES[0])
    info = cache.cache_info()
    print(json.dumps({"out": out.cpu().tolist(), "hits": info.link_hits, "misses": info.link_misses}))
""")


def _run(cache_folder, tag, values):
    env = dict(os.environ, NVMATHX_CACHE_DIR=str(cache_folder))
    env.pop("NVMATHX_LINK_CACHE", None)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, tag, json.dumps(values)], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_kernels_from_the_disk_cache(tmp_path, rng):
    pytest.importorskip("torch").cuda.is_available() or pytest.skip("torch has no CUDA")
    values = rng.standard_normal(5000).astype("float32")
    tag = f"{rng.integers(1 << 62)}"  # a source no earlier run has stored
    first = _run(tmp_path, tag, values.tolist())
    assert first["misses"] >= 2 and first["hits"] == 0  # both sets compiled and stored
    again = _run(tmp_path, tag, values.tolist())
    assert again["hits"] >= 2 and again["misses"] == 0  # both loaded, nothing compiled
    expected = 5.0 * values.astype("float64") + 1.0
    for result in (first, again):
        assert max(abs(a - b) for a, b in zip(result["out"], expected)) < 1e-5 * (1 + abs(expected).max())
