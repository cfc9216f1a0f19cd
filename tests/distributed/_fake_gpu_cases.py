"""The distributed FFT's GPU code path on the CPU: the host stand-in for the GPU (tests/fft/_fake_device.py:
cuFFT, kernels and memory emulated with numpy on host addresses) and a stand-in for NCCL whose
grouped sends and receives go through the test world's process group. This checks the GPU path's
own logic (buffer assignment, packing, direct sends and receives, local copies, pointer offsets) at
world sizes above 1, which no single GPU can run."""

from __future__ import annotations

import ctypes
import itertools
import traceback
import zlib

import numpy as np
import pytest

from distributed import _fft_cases as cases
from nvmathx.distributed import Slab
from nvmathx.distributed import fft as dfft


class FakeNccl:
    """ncclGroupStart/End with ncclSend/ncclRecv of bytes, carried out by the host group at group end."""

    def __init__(self, group):
        self.group = group
        self.pending = None
        self.groups = 0

    def group_start(self):
        assert self.pending is None
        self.pending = ([], [])

    def send_bytes(self, pointer, nbytes, peer, comm, stream):
        self.pending[0].append((pointer, nbytes, peer))

    def recv_bytes(self, pointer, nbytes, peer, comm, stream):
        self.pending[1].append((pointer, nbytes, peer))

    def group_end(self):
        sends, receives = self.pending
        self.pending = None
        self.groups += 1
        size = self.group.size
        assert len({peer for _, _, peer in sends}) == len(sends) and len({p for _, _, p in receives}) == len(receives)
        by_peer = {peer: (pointer, nbytes) for pointer, nbytes, peer in sends}
        send_counts = [by_peer.get(peer, (0, 0))[1] for peer in range(size)]
        packed = np.concatenate([np.frombuffer(ctypes.string_at(*by_peer[peer]), np.uint8) if peer in by_peer
                                 else np.empty(0, np.uint8) for peer in range(size)])
        wanted = {peer: (pointer, nbytes) for pointer, nbytes, peer in receives}
        receive_counts = [wanted.get(peer, (0, 0))[1] for peer in range(size)]
        received = self.group.alltoallv(packed, send_counts, receive_counts)
        offset = 0
        for peer in range(size):
            if peer in wanted:
                pointer, nbytes = wanted[peer]
                ctypes.memmove(pointer, received[offset:offset + nbytes].ctypes.data, nbytes)
                offset += nbytes


def _install():
    from fft._fake_device import install
    from nvmathx._bindings import nccl
    from nvmathx.distributed._context import current

    context = current()
    patch = pytest.MonkeyPatch()
    install(patch)
    fake = FakeNccl(context.group)
    for name in ("group_start", "group_end", "send_bytes", "recv_bytes"):
        patch.setattr(nccl, name, getattr(fake, name))
    from distributed._guards import PassThroughGuard

    patch.setattr(context, "nccl_comm", 1)
    patch.setattr(context, "nccl_guard", PassThroughGuard(1))
    patch.setattr(context, "device_id", 0)
    from nvmathx._bindings import cuda_driver
    from nvmathx._core import streams
    from nvmathx.distributed.fft import _gpu

    patch.setattr(cuda_driver, "stream_wait_stream", lambda waiting, producing: None)
    patch.setattr(_gpu, "side_stream", lambda device_id: streams._holders[(7, 0)])
    return patch, fake


def _one_case(seed, kind, shape, axes, distribution, reshape, norm, loopback):
    from fft._fake_device import to_device, to_host

    rng = np.random.default_rng(seed)
    x = cases._global_input(rng, kind, shape, axes, "double")
    transformed = axes or tuple(range(len(shape)))
    piece = np.ascontiguousarray(x[cases._slices(dfft_local_box(x.shape, distribution, transformed))])
    options = {"force_distributed": True, "loopback": loopback}
    result = getattr(dfft, kind)(to_device(piece), distribution, axes=axes, norm=norm, reshape=reshape,
                                 options=options)
    slab = cases.expected_result_slab(kind, len(transformed), distribution, reshape)
    out_shape = list(x.shape)
    if kind == "rfft":
        out_shape[transformed[-1]] = x.shape[transformed[-1]] // 2 + 1
    real_length = 2 * (x.shape[transformed[-1]] - 1) if kind == "irfft" else None
    if kind == "irfft":
        out_shape[transformed[-1]] = real_length
    expected = cases._reference(kind, x, axes, norm, real_length)[cases._slices(
        dfft_local_box(out_shape, slab, transformed))]
    host = to_host(result)
    assert host.shape == expected.shape, (host.shape, expected.shape)
    error = cases._error(host, expected)
    assert error < 1e-12, f"relative error {error:.2e}"


def dfft_local_box(shape, distribution, axes):
    import nvmathx.distributed as dist

    return dist.local_box(shape, distribution, axes=axes)


def run_pipelined(seed):
    """The same cases with the first pass and move cut into chunks (a tiny chunk size)."""
    from nvmathx.distributed.fft import _gpu

    saved = _gpu.CHUNK_BYTES
    _gpu.CHUNK_BYTES = 256
    try:
        return run(seed)
    finally:
        _gpu.CHUNK_BYTES = saved


def run(seed):
    patch, fake = _install()
    outcomes = {}
    try:
        for number, (kind, (shape, axes), distribution, reshape) in enumerate(
                itertools.product(cases.KINDS, cases.SHAPES, (Slab.X, Slab.Y), (True, False))):
            loopback = number % 4 == 0
            norm = cases.NORMS[number % 3]
            name = f"gpu-path-{kind}-{shape}-{distribution.name}-reshape{reshape}-{norm}-loopback{loopback}"
            try:
                _one_case(seed + zlib.crc32(name.encode()) % 100000, kind, shape, axes, distribution, reshape, norm,
                          loopback)
                outcomes[name] = None
            except Exception:  # noqa: BLE001
                outcomes[name] = traceback.format_exc(limit=8)
        outcomes["nccl groups were used"] = None if fake.groups > 0 else "no NCCL group ran"
    finally:
        from nvmathx.distributed._context import current

        for plan in current().caches.pop("fft", {}).values():  # made with the stand-ins: freed by them
            plan.free()
        patch.undo()
    return outcomes
