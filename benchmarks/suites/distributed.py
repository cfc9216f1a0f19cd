"""distributed suite: nvmathx.distributed beside the single-GPU call of the same global problem and
a torch peer built from torch's own pieces.

Run it on every rank of a job: ``torchrun --nproc-per-node N -m benchmarks distributed`` (or
plainly, at world size 1). Every rank measures; rank 0 writes ``distributed_ws{N}.json``. Timed
calls are collective, so the runner makes the same number of them on every rank (lockstep).

- ``dist_fftn_512cubed_c64``: a 512^3 complex64 3-D FFT. ``nvmathx``: the stateful
  ``nvmathx.distributed.fft.FFT`` (``Slab.X``, ``reshape=False``) on the distributed path even at
  world size 1 (``force_distributed``); ``nvmathx.fft``: ``nvmathx.fft.fftn`` of the whole global
  array on one GPU; ``torch``: local ``torch.fft`` passes with ``all_to_all_single`` between them.
- ``dist_fftn_c64``: weak scaling, global (256 N, 2048, 2048) complex64 in ``Slab.X``, 256 planes
  (8 GiB) per GPU; params ``t_local_ms`` (the single-GPU passes over one rank's piece) and
  ``t_a2a_ms`` (NCCL's all-to-all of the same bytes, through torch), measured in the same run.
- ``dist_matmul_16384_bf16``: A (16384 N x 16384, row slabs) @ B (16384 x 16384, replicated) in
  bfloat16 on cuBLASMp (forced at world size 1); ``nvmathx.linalg``: one rank's local GEMM on one
  GPU, also measured into the params as ``single_gpu_ms`` (weak scaling: 1-D row slabs).
- ``dist_matmul_bf16_grid2d`` (world sizes with a 2-D grid, P = pr x pc, pr and pc > 1): weak
  scaling on a block-cyclic grid, A (16384 pr x 16384) @ B (16384 x 16384 pc) in bfloat16, every
  operand ``BlockCyclic((pr, pc), (2048, 2048))``: each rank computes a 16384 x 16384 block of the
  product with K = 16384, the single GEMM of ``single_gpu_ms``, plus cuBLASMp's exchanges.

NVLink multicast stays off in every process (``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``, ``NVSHMEM_DISABLE_NVLS=1``): on a shared host it can take
GPUs out of service.
"""

from __future__ import annotations

import atexit
import os
import socket
import statistics

from benchmarks import Case, Skip, bandwidth, import_or_skip, tflops

__all__ = ["cases", "result_name"]

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                      ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_name, _value)


def result_name(ctx) -> str:
    return f"distributed_ws{ctx.world_size}"


def _world(ctx):
    """torch.distributed (NCCL for CUDA tensors, gloo for host ones) and nvmathx.distributed, once."""
    torch = import_or_skip("torch")
    import torch.distributed as dist

    import nvmathx.distributed

    torch.cuda.set_device(ctx.device_id)
    if not dist.is_initialized():
        if "MASTER_ADDR" not in os.environ:  # not launched by torchrun: a world of one
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
        dist.init_process_group(backend="cpu:gloo,cuda:nccl", device_id=torch.device("cuda", ctx.device_id))
        atexit.register(dist.destroy_process_group)  # runs after nvmathx's, registered later
    if not nvmathx.distributed.is_initialized():
        nvmathx.distributed.initialize(device_id=ctx.device_id)
        atexit.register(nvmathx.distributed.finalize)
    return torch, dist


def _events_ms(torch, call, warmup=3, repeats=10) -> float:
    """Median GPU time of ``call`` with a fixed number of calls (the same on every rank)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _local_piece(torch, ctx, global_shape):
    from nvmathx.distributed import Slab, local_shape

    shape = local_shape(global_shape, Slab.X)
    generator = torch.Generator(device=f"cuda:{ctx.device_id}").manual_seed(ctx.seed + ctx.rank)
    real = torch.randn(shape, device=f"cuda:{ctx.device_id}", generator=generator)
    imag = torch.randn(shape, device=f"cuda:{ctx.device_id}", generator=generator)
    return torch.complex(real, imag)


def _torch_fftn(torch, dist, x, world_size):
    """torch's own slab FFT: fft2 of the local planes, all-to-all, fft of the first axis (result in
    Y slabs, as nvmathx's with reshape=False)."""
    n0_local, n1, n2 = x.shape
    n1_local = n1 // world_size
    received = torch.empty((world_size, n0_local, n1_local, n2), dtype=x.dtype, device=x.device)

    def call():
        planes = torch.fft.fft2(x)
        send = planes.reshape(n0_local, world_size, n1_local, n2).transpose(0, 1).contiguous()
        dist.all_to_all_single(received, send)
        return torch.fft.fft(received.reshape(world_size * n0_local, n1_local, n2), dim=0)

    return call


def _fft_case(ctx, name, global_shape, *, weak: bool) -> Case:
    params = {"world_size": ctx.world_size, "engine": "nccl", "global_shape": list(global_shape),
              "dtype": "complex64", "distribution": "Slab.X", "reshape": False}
    elements = 1
    for extent in global_shape:
        elements *= extent
    local_bytes = 2 * 8 * elements // ctx.world_size  # one read and one write of this rank's piece

    def nvmathx_setup():
        torch, _ = _world(ctx)
        from nvmathx.distributed import Slab
        from nvmathx.distributed.fft import FFT

        x = _local_piece(torch, ctx, global_shape)
        plan = FFT(x, Slab.X, options={"reshape": False, "force_distributed": True})
        plan.plan()
        if weak:
            _measure_parts(ctx, x, params)
        return plan.execute

    def single_setup():
        torch, _ = _world(ctx)
        import nvmathx.fft

        free, _ = torch.cuda.mem_get_info()
        if 3 * 8 * elements > 0.8 * free:
            raise Skip(f"the global array ({8 * elements / 2**30:.0f} GiB) does not fit one GPU with its result")
        x = _local_piece(torch, ctx, global_shape) if ctx.world_size == 1 else torch.randn(
            global_shape, dtype=torch.complex64, device=f"cuda:{ctx.device_id}")
        return lambda: nvmathx.fft.fftn(x)

    def torch_setup():
        torch, dist = _world(ctx)
        if global_shape[1] % ctx.world_size:
            raise Skip("the torch peer needs the second axis divisible by the world size")
        return _torch_fftn(torch, dist, _local_piece(torch, ctx, global_shape), ctx.world_size)

    return Case(name=name, unit="ms", params=params, derive=bandwidth(local_bytes), warmup=3, repeats=20,
                setups={"nvmathx": nvmathx_setup, "nvmathx.fft": single_setup, "torch": torch_setup},
                note="TB/s: this rank's piece read once and written once; nvmathx on the distributed path "
                     "(forced at world size 1), nvmathx.fft the whole global array on one GPU")


def _measure_parts(ctx, x, params) -> None:
    """t_local_ms: the single-GPU passes over this rank's piece; t_a2a_ms: NCCL's all-to-all of the
    same bytes (torch's all_to_all_single on its NCCL group)."""
    torch, dist = _world(ctx)
    import nvmathx.fft

    n0_local, n1, n2 = x.shape
    y_piece = torch.empty((n0_local * ctx.world_size, n1 // ctx.world_size, n2), dtype=x.dtype, device=x.device)
    params["t_local_ms"] = round(_events_ms(torch, lambda: nvmathx.fft.fftn(x, axes=(1, 2)))
                                 + _events_ms(torch, lambda: nvmathx.fft.fft(y_piece, axis=0)), 4)
    send, received = x.reshape(-1), torch.empty_like(x).reshape(-1)
    params["t_a2a_ms"] = round(_events_ms(torch, lambda: dist.all_to_all_single(received, send)), 4)


def _bf16_operands(torch, ctx, a_shape, b_shape):
    generator = torch.Generator(device=f"cuda:{ctx.device_id}").manual_seed(ctx.seed + ctx.rank)
    a = torch.randn(a_shape, device=f"cuda:{ctx.device_id}", generator=generator).to(torch.bfloat16)
    b = torch.randn(b_shape, device=f"cuda:{ctx.device_id}", generator=generator).to(torch.bfloat16)
    return a, b


def _single_gpu_ms(torch, ctx, n, params) -> None:
    """The single-GPU GEMM of one rank's work (n x n x n, bfloat16), into the params."""
    import nvmathx.linalg

    a, b = _bf16_operands(torch, ctx, (n, n), (n, n))
    params["single_gpu_ms"] = round(_events_ms(torch, lambda: nvmathx.linalg.matmul(a, b)), 4)


def _matmul_case(ctx) -> Case:
    n = 4096 if ctx.quick else 16384
    params = {"world_size": ctx.world_size, "engine": "cublasmp", "m": n * ctx.world_size, "n": n, "k": n,
              "dtype": "bfloat16", "distributions": ["Slab.X", "Replicated", "Slab.X"]}

    def nvmathx_setup():
        torch, _ = _world(ctx)
        from nvmathx.distributed import Replicated, Slab
        from nvmathx.distributed.linalg import Matmul

        a, b = _bf16_operands(torch, ctx, (n, n), (n, n))
        plan = Matmul(a, b, distributions=(Slab.X, Replicated(), Slab.X), options={"force_distributed": True})
        plan.plan()
        _single_gpu_ms(torch, ctx, n, params)
        return plan.execute

    def single_setup():
        torch, _ = _world(ctx)
        import nvmathx.linalg

        a, b = _bf16_operands(torch, ctx, (n, n), (n, n))
        return lambda: nvmathx.linalg.matmul(a, b)

    def torch_setup():
        torch, _ = _world(ctx)
        a, b = _bf16_operands(torch, ctx, (n, n), (n, n))
        return lambda: torch.matmul(a, b)

    return Case(name="dist_matmul_16384_bf16", unit="ms", params=params, derive=tflops(2 * n ** 3), warmup=3,
                repeats=20, setups={"nvmathx": nvmathx_setup, "nvmathx.linalg": single_setup, "torch": torch_setup},
                note="per rank: a (16384 x 16384) row slab of A times a replicated B; nvmathx.linalg is that "
                     "local GEMM on one GPU (single_gpu_ms), torch its torch.matmul")


def process_grid(world_size: int):
    """The squarest 2-D process grid (rows <= columns, both > 1) of ``world_size`` ranks, or None."""
    rows = max((r for r in range(2, int(world_size ** 0.5) + 1) if world_size % r == 0), default=None)
    return None if rows is None else (rows, world_size // rows)


def _matmul_grid_case(ctx, grid) -> Case:
    n = 4096 if ctx.quick else 16384
    block = n // 8
    rows, columns = grid
    m, k, n_global = n * rows, n, n * columns
    params = {"world_size": ctx.world_size, "engine": "cublasmp", "m": m, "n": n_global, "k": k,
              "dtype": "bfloat16", "process_grid": list(grid), "block_shape": [block, block],
              "distributions": [f"BlockCyclic({grid}, ({block}, {block}))"] * 3}

    def nvmathx_setup():
        torch, _ = _world(ctx)
        from nvmathx.distributed import BlockCyclic
        from nvmathx.distributed.linalg import Matmul, local_shape

        layout = BlockCyclic(grid, (block, block))
        a, b = _bf16_operands(torch, ctx, local_shape((m, k), layout), local_shape((k, n_global), layout))
        plan = Matmul(a, b, distributions=(layout, layout, layout))
        plan.plan()
        _single_gpu_ms(torch, ctx, n, params)
        return plan.execute

    return Case(name="dist_matmul_bf16_grid2d", unit="ms", params=params, derive=tflops(2 * m * n_global * k
                                                                                       / ctx.world_size),
                warmup=3, repeats=20, setups={"nvmathx": nvmathx_setup},
                note="TFLOP/s per rank; every rank computes one 16384 x 16384 block of the product (K = 16384): "
                     "single_gpu_ms is that GEMM alone on one GPU")


def cases(ctx) -> list[Case]:
    cube = 128 if ctx.quick else 512
    planes = 32 if ctx.quick else 256
    side = 512 if ctx.quick else 2048
    return [
        _fft_case(ctx, "dist_fftn_512cubed_c64", (cube,) * 3, weak=False),
        _fft_case(ctx, "dist_fftn_c64", (planes * ctx.world_size, side, side), weak=True),
        _matmul_case(ctx),
        *([_matmul_grid_case(ctx, grid)] if (grid := process_grid(ctx.world_size)) else []),
    ]
