"""One rank of a test world (see helpers.distributed): set up the process group and
nvmathx.distributed, run the target, write its return value for the parent."""

import datetime
import importlib
import os
import pathlib
import pickle
import sys
import threading
import time


def _watchdog(seconds: float, test_process: int) -> None:
    """Exit the process if it outlives its deadline (a hang in a collective must fail, not block),
    or the test process that started the world (ranks run in their own session, so a killed test
    run would otherwise leave them running, and loading the machine, until their deadline)."""
    timer = threading.Timer(seconds, lambda: os._exit(124))
    timer.daemon = True
    timer.start()

    def exit_when_orphaned() -> None:
        while True:
            time.sleep(1)
            try:
                os.kill(test_process, 0)
            except ProcessLookupError:
                os._exit(125)
            except PermissionError:
                pass  # exists, owned by another user

    threading.Thread(target=exit_when_orphaned, daemon=True).start()


def main() -> int:
    timeout = float(os.environ["NVMATHX_WORLD_TIMEOUT"])
    _watchdog(timeout, int(os.environ["NVMATHX_WORLD_PARENT"]))
    import nvmathx.distributed as distributed

    if os.environ["NVMATHX_WORLD_LAUNCHER"] == "mpi":
        from mpi4py import MPI

        group, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
        group, rank = None, dist.get_rank()
    device_id = None
    if os.environ.get("NVMATHX_WORLD_DEVICE") == "cuda":  # a GPU world: one GPU per rank, NCCL
        import torch

        device_id = int(os.environ.get("LOCAL_RANK", rank % torch.cuda.device_count()))
        torch.cuda.set_device(device_id)
    collective_timeout = os.environ.get("NVMATHX_WORLD_COLLECTIVE_TIMEOUT")
    distributed.initialize(group, device_id=device_id,
                           **({"timeout": float(collective_timeout)} if collective_timeout else {}))
    module_name, function_name = os.environ["NVMATHX_WORLD_TARGET"].split(":")
    result = getattr(importlib.import_module(module_name), function_name)(int(os.environ["NVMATHX_WORLD_SEED"]))
    distributed.finalize()
    out = pathlib.Path(os.environ["NVMATHX_WORLD_OUT"]) / f"rank{rank}.pickle"
    out.write_bytes(pickle.dumps(result))
    if os.environ.get("NVMATHX_WORLD_FAULTS"):  # a rank was killed: no barrier can complete
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    if os.environ["NVMATHX_WORLD_LAUNCHER"] == "mpi":
        return 0  # mpi4py finalizes MPI at exit
    import torch.distributed as dist

    dist.barrier()  # every rank is done with the group before any tears it down
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: under load, torch's gloo backend sometimes aborts in a static
    # destructor after destroy_process_group ("terminate called without an active exception"),
    # which would fail a world whose result is already written.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
