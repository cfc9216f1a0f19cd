"""A distributed 3-D FFT, checked against numpy: every rank holds a slab of planes of a global
complex array, transforms it with nvmathx.distributed.fft, and compares its piece of the spectrum
with numpy's FFT of the whole array.

    python examples/distributed_fft3d.py                          # one process, CPU
    torchrun --nproc-per-node 4 examples/distributed_fft3d.py     # four processes (gloo), CPU
    torchrun --nproc-per-node 8 examples/distributed_fft3d.py --gpu   # eight GPUs (NCCL)
    mpiexec -n 3 python examples/distributed_fft3d.py --mpi       # three processes through mpi4py

Every rank builds the same global array from one seed (a real code would load or compute only its
own piece). Exits 0 when every rank's piece matches.
"""

import argparse
import os
import sys

import numpy as np

import nvmathx.distributed as dist
from nvmathx.distributed import Slab


def start(use_mpi: bool, gpu: bool):
    """The process group, this rank, the world size and the GPU this rank runs with."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # keep NVLink multicast off on shared hosts
    if use_mpi:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        return comm, comm.Get_rank(), comm.Get_size(), comm.Get_rank() if gpu else None
    import torch.distributed

    if "RANK" not in os.environ:  # run without a launcher: a world of one, on a free local port
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo")
    rank, world_size = torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, rank, world_size, int(os.environ.get("LOCAL_RANK", 0)) if gpu else None


def stop(use_mpi: bool) -> None:
    """Tear down what :func:`start` set up (after nvmathx.distributed.finalize)."""
    if not use_mpi:
        import torch.distributed

        torch.distributed.barrier()  # no rank tears the group down while another still uses it
        torch.distributed.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=(48, 40, 36))
    parser.add_argument("--mpi", action="store_true", help="use mpi4py's COMM_WORLD (launch with mpiexec)")
    parser.add_argument("--gpu", action="store_true", help="torch CUDA tensors, one GPU per rank")
    args = parser.parse_args()

    group, rank, world_size, device_id = start(args.mpi, args.gpu)
    dist.initialize(group, device_id=device_id)

    rng = np.random.default_rng(2026)
    shape = tuple(args.shape)
    whole = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex128)
    mine = dist.local_box(shape, Slab.X)
    piece = np.ascontiguousarray(whole[tuple(slice(a, b) for a, b in zip(mine.lower, mine.upper))])
    if args.gpu:
        import torch

        piece = torch.from_numpy(piece).to(f"cuda:{device_id}")

    # reshape=False leaves the spectrum in Y slabs (one all-to-all fewer); ask where it landed.
    with dist.fft.FFT(piece, Slab.X, options={"reshape": False}) as plan:
        plan.plan()
        spectrum = plan.execute()
        box = plan.result_box
    spectrum = spectrum.cpu().numpy() if args.gpu else spectrum

    expected = np.fft.fftn(whole)[tuple(slice(a, b) for a, b in zip(box.lower, box.upper))]
    error = np.linalg.norm(spectrum - expected) / np.linalg.norm(expected)
    print(f"rank {rank} of {world_size}: input planes {mine.lower[0]}..{mine.upper[0]}, result {box}, "
          f"relative error {error:.1e}", flush=True)
    dist.finalize()
    stop(args.mpi)
    if not error < 1e-12:
        print(f"rank {rank}: MISMATCH against numpy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
