"""Matmul suite: per-call host cost, large GEMMs, fused GELU_BIAS epilogs and float8.

- ``overhead_stateful_64_f32`` / ``overhead_function_64_f32``: host microseconds per call of a
  64^3 float32 product: ``Matmul.execute()`` and a cache hit of ``matmul()``, beside torch's
  ``a @ b``, cupy's and nvmath-python's stateful / function forms.
- ``gemm_8192_{bf16,f16,f32}``: GPU time of 8192^3 products (default compute types, no TF32).
- ``gelu_bias_MxNxK_bf16``: ``gelu(a @ b + bias)`` (tanh GELU, bias per output feature): nvmathx's
  GELU_BIAS epilog; torch unfused (``torch`` column) and ``torch._addmm_activation`` (extra
  column ``torch.addmm_activation``); ``a @ b`` alone (``torch.gemm_only``: no bias, no GELU, the
  floor for any fused version); nvmath-python's GELU_BIAS epilog (its bias is per row of
  its column-major result: the same work).
- ``gemm_MxNxK_bf16`` (M of 1 to 256: decode-time shapes): ``x @ W.T`` with ``W`` in
  ``nn.Linear``'s ``(N, K)`` layout, bfloat16; the ``nvmathx`` column is a planned Matmul without
  autotuning (the plan's default choice), beside ``torch.nn.functional.linear`` and nvmath-python's
  planned Matmul.
- ``autotune_restart_8192_bf16``: wall seconds of ``Matmul.autotune()`` (32 candidates and their
  custom-option variants) on an 8192^3 bfloat16 product in a fresh process with an empty
  :mod:`nvmathx.autotune_cache` (``nvmathx.first_process``), and the same call in a second fresh
  process over that cache (``nvmathx.second_process``); ``params.kernel_ms`` records the GEMM each
  process then runs.
- ``gemm_8192_fp8e4m3``: float8 e4m3 with per-tensor scales, bfloat16 result, beside
  ``torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)``.

In the GPU-time cases the ``nvmathx`` column runs a planned stateful Matmul as ``plan()`` leaves
it (cuBLASLt's first pick, as torch takes it); ``nvmathx.autotuned`` runs the same planned with
``limit=32`` and ``expand_custom_options=True`` (not for float32) after ``autotune()`` during
setup (untimed), and setup prints which candidate autotuning chose.
nvmath-python's Matmul is planned and autotuned, as a user of its stateful API would. (In the
run of 2026-12-02 these two columns were named ``nvmathx.heuristic`` and ``nvmathx``: autotune
chose algorithms that ran slower than the heuristic's first pick; see CHANGELOG, known issues.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from benchmarks import Case, import_or_skip, tflops

__all__ = ["cases"]

_SMALL_M_SHAPES = ((1, 8192, 8192), (16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192),
                   (16, 14336, 4096))
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_GELU_SHAPES = ((4096, 4096, 4096), (8192, 2048, 8192), (16384, 4096, 1024))
# The stateful APIs of nvmathx and nvmath-python both autotune in the large cases (setup, untimed):
# each runs the algorithm its own timing picked among the heuristic's candidates.
_AUTOTUNE_ITERATIONS = 5
_AUTOTUNE_CANDIDATES = 32



def _torch(ctx, shape, dtype="float32"):
    torch = import_or_skip("torch")
    return torch.randn(*shape, device=f"cuda:{ctx.device_id}", dtype=getattr(torch, dtype))


def _nvmath_stateful(a, b, autotune=False, **plan):
    nvmath = import_or_skip("nvmath")
    mm = nvmath.linalg.advanced.Matmul(a, b)
    mm.plan(**plan)
    if autotune:
        mm.autotune(iterations=_AUTOTUNE_ITERATIONS)
    return mm


def _nvmathx_stateful(a, b, autotune=False, expand=True, **kwargs):
    """A planned (and optionally autotuned) nvmathx Matmul; ``kwargs`` go to the constructor or plan().

    Autotuning times the heuristic's candidates and, with ``expand``, their custom-option variants
    (``MatmulPlanPreferences.expand_custom_options``)."""
    from nvmathx.linalg import Matmul

    plan_keys = {"epilog", "epilog_inputs"}
    mm = Matmul(a, b, **{k: v for k, v in kwargs.items() if k not in plan_keys})
    plan = {k: v for k, v in kwargs.items() if k in plan_keys}
    if autotune:  # a wider search than the default 8 candidates, as a user tuning a hot GEMM would
        plan["preferences"] = {"limit": _AUTOTUNE_CANDIDATES, "expand_custom_options": expand}
    mm.plan(**plan)
    if autotune:
        planned_order = mm.algorithms  # the heuristic's candidates, then their custom-option variants
        timings = mm.autotune(iterations=_AUTOTUNE_ITERATIONS)
        ms = {planned_order.index(algorithm): time for time, algorithm in timings}
        chosen = planned_order.index(timings[0][1])
        print(f"    nvmathx autotune: candidate #{chosen} of {len(planned_order)} chosen, {ms[chosen]:.4f} ms/run "
              f"(heuristic #0: {ms[0]:.4f})", flush=True)
    return mm


def _heuristic_column(setup):
    """The nvmathx setup without autotuning (the plan's default: cuBLASLt's first pick)."""
    return lambda: setup(autotune=False)


def _overhead_cases(ctx):
    shape = (64, 64)

    def stateful_nvmathx():
        return _nvmathx_stateful(_torch(ctx, shape), _torch(ctx, shape)).execute

    def function_nvmathx():
        from nvmathx.linalg import matmul

        a, b = _torch(ctx, shape), _torch(ctx, shape)
        matmul(a, b)
        return lambda: matmul(a, b)

    def torch_matmul():
        a, b = _torch(ctx, shape), _torch(ctx, shape)
        return lambda: a @ b

    def cupy_matmul():
        cupy = import_or_skip("cupy")
        with cupy.cuda.Device(ctx.device_id):
            a = cupy.random.standard_normal(shape, dtype=cupy.float32)
            b = cupy.random.standard_normal(shape, dtype=cupy.float32)
        return lambda: a @ b

    def stateful_nvmath():
        return _nvmath_stateful(_torch(ctx, shape), _torch(ctx, shape)).execute

    def function_nvmath():
        nvmath = import_or_skip("nvmath")
        a, b = _torch(ctx, shape), _torch(ctx, shape)
        return lambda: nvmath.linalg.advanced.matmul(a, b)

    params = {"m": 64, "n": 64, "k": 64, "dtype": "float32"}
    common = {"torch": torch_matmul, "cupy": cupy_matmul}
    return [
        Case("overhead_stateful_64_f32", "us_per_call",
             {"nvmathx": stateful_nvmathx, "nvmath-python": stateful_nvmath, **common},
             params=params, note="Matmul.execute() per call; torch/cupy: a @ b"),
        Case("overhead_function_64_f32", "us_per_call",
             {"nvmathx": function_nvmathx, "nvmath-python": function_nvmath, **common},
             params=params, note="matmul() per call (plan-cache hit); torch/cupy: a @ b"),
    ]


def _gemm_case(ctx, dtype, label):
    n = 1024 if ctx.quick else 8192

    def nvmathx_gemm(autotune=True):
        # float32 runs 21 ms a product: eight times the candidates would take minutes to autotune
        return _nvmathx_stateful(_torch(ctx, (n, n), dtype), _torch(ctx, (n, n), dtype), autotune=autotune,
                                 expand=dtype != "float32").execute

    def torch_gemm():
        a, b = _torch(ctx, (n, n), dtype), _torch(ctx, (n, n), dtype)
        return lambda: a @ b

    def nvmath_gemm():
        return _nvmath_stateful(_torch(ctx, (n, n), dtype), _torch(ctx, (n, n), dtype), autotune=True).execute

    setups = {"nvmathx": _heuristic_column(nvmathx_gemm), "torch": torch_gemm, "nvmath-python": nvmath_gemm,
              "nvmathx.autotuned": nvmathx_gemm}
    return Case(f"gemm_{n}_{label}", "ms", setups,
                params={"m": n, "n": n, "k": n, "dtype": dtype}, derive=tflops(2 * n**3))


def _gelu_case(ctx, m, n, k):
    if ctx.quick:
        m, n, k = m // 8, n // 8, k // 8

    def operands():
        return _torch(ctx, (m, k), "bfloat16"), _torch(ctx, (k, n), "bfloat16"), _torch(ctx, (n,), "bfloat16")

    def nvmathx_gelu(autotune=True):
        a, b, bias = operands()
        return _nvmathx_stateful(a, b, autotune=autotune, epilog="GELU_BIAS", epilog_inputs={"bias": bias}).execute

    def torch_unfused():
        torch = import_or_skip("torch")
        a, b, bias = operands()
        gelu = torch.nn.functional.gelu
        return lambda: gelu(a @ b + bias, approximate="tanh")

    def torch_gemm_only():
        a, b, _ = operands()
        return lambda: a @ b

    def torch_addmm_activation():
        torch = import_or_skip("torch")
        a, b, bias = operands()
        return lambda: torch._addmm_activation(bias, a, b, use_gelu=True)

    def nvmath_gelu():
        nvmath = import_or_skip("nvmath")
        a, b, _ = operands()
        bias = _torch(ctx, (m,), "bfloat16")  # nvmath's bias runs along the rows of its result
        mm = _nvmath_stateful(a, b, autotune=True, epilog=nvmath.linalg.advanced.MatmulEpilog.GELU_BIAS,
                              epilog_inputs={"bias": bias})
        return mm.execute

    setups = {"nvmathx": _heuristic_column(nvmathx_gelu), "torch": torch_unfused,
              "torch.addmm_activation": torch_addmm_activation, "torch.gemm_only": torch_gemm_only,
              "nvmath-python": nvmath_gelu, "nvmathx.autotuned": nvmathx_gelu}
    return Case(f"gelu_bias_{m}x{n}x{k}_bf16", "ms", setups, params={"m": m, "n": n, "k": k, "dtype": "bfloat16"},
                derive=tflops(2 * m * n * k), note="gelu(a @ b + bias), tanh GELU; torch column unfused")


def _fp8_case(ctx):
    n = 1024 if ctx.quick else 8192

    def operands():
        torch = import_or_skip("torch")
        a = _torch(ctx, (n, n)).to(torch.float8_e4m3fn)
        b = _torch(ctx, (n, n)).to(torch.float8_e4m3fn).t()  # column-major, K contiguous
        scale_a = torch.tensor(0.5, device=a.device)
        scale_b = torch.tensor(2.0, device=a.device)
        return a, b, scale_a, scale_b

    def nvmathx_fp8(autotune=True):
        a, b, scale_a, scale_b = operands()
        return _nvmathx_stateful(a, b, autotune=autotune, quantization_scales={"a": scale_a, "b": scale_b},
                                 options={"result_type": "bfloat16"}).execute

    def torch_fp8():
        torch = import_or_skip("torch")
        a, b, scale_a, scale_b = operands()
        return lambda: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)

    def nvmath_fp8():
        nvmath = import_or_skip("nvmath")
        a, b, scale_a, scale_b = operands()
        mm = nvmath.linalg.advanced.Matmul(a, b, quantization_scales={"a": scale_a, "b": scale_b},
                                           options={"result_type": nvmath.CudaDataType.CUDA_R_16BF})
        mm.plan()
        mm.autotune(iterations=_AUTOTUNE_ITERATIONS)
        return mm.execute

    setups = {"nvmathx": _heuristic_column(nvmathx_fp8), "torch": torch_fp8, "nvmath-python": nvmath_fp8,
              "nvmathx.autotuned": nvmathx_fp8}
    return Case(f"gemm_{n}_fp8e4m3", "ms", setups,
                params={"m": n, "n": n, "k": n, "dtype": "float8_e4m3fn", "result": "bfloat16"},
                derive=tflops(2 * n**3),
                note="torch column: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=bfloat16)")


def _small_m_case(ctx, m, n, k):
    def operands():
        return _torch(ctx, (m, k), "bfloat16"), _torch(ctx, (n, k), "bfloat16")

    def nvmathx_linear():
        x, weight = operands()
        return _nvmathx_stateful(x, weight.T).execute

    def torch_linear():
        torch = import_or_skip("torch")
        x, weight = operands()
        return lambda: torch.nn.functional.linear(x, weight)

    def nvmath_linear():
        x, weight = operands()
        return _nvmath_stateful(x, weight.T).execute

    return Case(f"gemm_{m}x{n}x{k}_bf16", "ms", {"nvmathx": nvmathx_linear, "torch": torch_linear,
                                                 "nvmath-python": nvmath_linear},
                params={"m": m, "n": n, "k": k, "dtype": "bfloat16", "layout": "x @ W.T (nn.Linear)"},
                derive=tflops(2 * m * n * k), note="planned, not autotuned; torch: F.linear(x, W)")


# A fresh interpreter autotunes one product with the autotune cache in FOLDER and prints what it
# measured: the autotune() call's wall seconds and the GPU time of the GEMM it then runs.
_AUTOTUNE_SCRIPT = """
import json, sys, time
import torch
import nvmathx.autotune_cache as autotune_cache
from nvmathx.linalg import Matmul
folder, n = sys.argv[1], int(sys.argv[2])
autotune_cache.enable(folder)
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
mm = Matmul(a, b)
mm.plan(preferences={"limit": 32, "expand_custom_options": True})
torch.cuda.synchronize()
start = time.perf_counter()
mm.autotune(iterations=5)
seconds = time.perf_counter() - start
for _ in range(10):
    mm.execute()
begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
begin.record()
for _ in range(20):
    mm.execute()
end.record()
end.synchronize()
print(json.dumps({"seconds": seconds, "kernel_ms": begin.elapsed_time(end) / 20, "info": list(autotune_cache.info())}))
"""


def _autotune_process(folder: str, n: int) -> dict:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_REPO_ROOT, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", _AUTOTUNE_SCRIPT, folder, str(n)], capture_output=True, text=True,
                          env=environment, timeout=600)
    if done.returncode:
        raise RuntimeError(f"autotune process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _autotune_restart_case(ctx):
    n = 1024 if ctx.quick else 8192
    params = {"m": n, "n": n, "k": n, "dtype": "bfloat16", "kernel_ms": {}}

    def first_process():
        def run():
            measured = _autotune_process(tempfile.mkdtemp(prefix="nvmathx-autotune-"), n)  # an empty cache each time
            params["kernel_ms"]["nvmathx.first_process"] = round(measured["kernel_ms"], 5)
            return measured["seconds"]
        return run

    def second_process():
        folder = tempfile.mkdtemp(prefix="nvmathx-autotune-")
        _autotune_process(folder, n)  # the earlier process that filled the cache (untimed)

        def run():
            measured = _autotune_process(folder, n)
            params["kernel_ms"]["nvmathx.second_process"] = round(measured["kernel_ms"], 5)
            return measured["seconds"]
        return run

    return Case(f"autotune_restart_{n}_bf16", "s", {"nvmathx.first_process": first_process,
                                                    "nvmathx.second_process": second_process},
                params=params, repeats=1,
                note="Matmul.autotune() wall seconds in a fresh process: empty autotune cache, then the cache the "
                     "first process filled")


def cases(ctx):
    return [
        *_overhead_cases(ctx),
        *(_small_m_case(ctx, m, n, k) for m, n, k in _SMALL_M_SHAPES),
        _autotune_restart_case(ctx),
        _gemm_case(ctx, "bfloat16", "bf16"),
        _gemm_case(ctx, "float16", "f16"),
        _gemm_case(ctx, "float32", "f32"),
        *(_gelu_case(ctx, m, n, k) for m, n, k in _GELU_SHAPES),
        _fp8_case(ctx),
    ]
