"""The distributed matmul on the CPU space, in worlds of 1 to 4 processes (torch.distributed with gloo)
and 2 and 3 processes (mpiexec with mpi4py), one world per test running every case; and, without
processes, numroc, the local shapes and the mapping of a C-ordered product onto cuBLASMp's
column-major descriptors, checked against a model of ScaLAPACK's block-cyclic layout written here."""

import itertools

import numpy as np
import pytest

from helpers.distributed import assert_cases_passed, mpiexec, run_world
from nvmathx import OptionsError, UnsupportedLayoutError
from nvmathx.distributed import BlockCyclic, Replicated, Slab
from nvmathx.distributed.linalg import _layout, local_shape


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_gloo_world(world_size, seed):
    pytest.importorskip("torch")
    assert_cases_passed(run_world(world_size, "distributed._matmul_cases:run", seed=seed), 50)


@pytest.mark.parametrize("world_size", [2, 3])
def test_mpi_world(world_size, seed):
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    assert_cases_passed(run_world(world_size, "distributed._matmul_cases:run", seed=seed, launcher="mpi"), 80)


# -- numroc and local shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, nb, nprocs, source, expected", [
    (10, 3, 4, 0, [3, 3, 3, 1]),
    (9, 3, 4, 0, [3, 3, 3, 0]),
    (5, 2, 4, 0, [2, 2, 1, 0]),
    (7, 2, 2, 0, [4, 3]),
    (7, 2, 2, 1, [3, 4]),  # dealt from process 1
    (13, 2, 3, 0, [5, 4, 4]),
    (0, 4, 3, 0, [0, 0, 0]),
    (6, 10, 2, 0, [6, 0]),
])
def test_numroc(n, nb, nprocs, source, expected):
    counts = [_layout.numroc(n, nb, p, source, nprocs) for p in range(nprocs)]
    assert counts == expected and sum(counts) == n


@pytest.mark.parametrize("shape, distribution, world_size, expected", [
    ((10, 4), Slab.X, 4, [(3, 4), (3, 4), (3, 4), (1, 4)]),
    ((9, 4), Slab.X, 4, [(3, 4), (3, 4), (3, 4), (0, 4)]),
    ((5, 9), Slab.Y, 4, [(5, 3), (5, 3), (5, 3), (5, 0)]),
    ((2, 2), Slab.Y, 3, [(2, 1), (2, 1), (2, 0)]),
    ((5, 3), Replicated(), 3, [(5, 3)] * 3),
    ((7, 6), BlockCyclic((2, 2), (2, 2)), 4, [(4, 4), (4, 2), (3, 4), (3, 2)]),
    ((7, 6), BlockCyclic((1, 2), (1, 4)), 2, [(7, 4), (7, 2)]),
    ((7, 6), BlockCyclic((3, 1), (2, 6)), 3, [(3, 6), (2, 6), (2, 6)]),
])
def test_local_shape(shape, distribution, world_size, expected):
    assert [local_shape(shape, distribution, rank=r, world_size=world_size) for r in range(world_size)] == expected


@pytest.mark.parametrize("arguments, argument", [
    (((4, 4), Slab.X, 4, 2), "rank"),
    (((4, 4, 4), Slab.X, 0, 2), "global_shape"),
    (((4, -1), Slab.X, 0, 2), "global_shape"),
    (((4, 4), "Z", 0, 2), "distribution"),
    (((4, 4), BlockCyclic((2, 2), (1, 1)), 0, 2), "distribution"),
])
def test_local_shape_errors(arguments, argument):
    shape, distribution, rank, world_size = arguments
    with pytest.raises(OptionsError, match=f"^{argument}:"):
        local_shape(shape, distribution, rank=rank, world_size=world_size)


def test_global_shape_is_inferred_and_pieces_checked():
    from nvmathx import OperandError

    assert _layout.infer_global_shape(Slab.Y, [(5, 3), (5, 3), (5, 1)], "b") == (5, 7)
    assert _layout.infer_global_shape(BlockCyclic((2, 2), (2, 2)), [(4, 4), (4, 2), (3, 4), (3, 2)], "a") == (7, 6)
    with pytest.raises(OperandError, match="^a: rank 1 holds a \\(2, 4\\) piece"):
        _layout.infer_global_shape(Slab.X, [(3, 4), (2, 4), (3, 4)], "a")  # ceil(8 / 3): 3, 3, 2
    with pytest.raises(OperandError, match="^c: a Replicated matrix"):
        _layout.infer_global_shape(Replicated(), [(2, 2), (2, 3)], "c")


# -- strategies -------------------------------------------------------------------------------------------------


_KINDS = {"X": Slab.X, "Y": Slab.Y, "R": Replicated()}


@pytest.mark.parametrize("kinds", ["".join(k) for k in itertools.product("XYR", repeat=3)])
def test_strategy(kinds):
    distributions = tuple(_KINDS[k] for k in kinds)
    free = kinds in ("RRR", "RRX", "RRY", "XRX", "RYY")  # every result piece from the rank's own pieces
    assert _layout.plan_layout((5, 4, 3), distributions, 3).strategy == ("local" if free else "distributed")
    assert _layout.plan_layout((5, 4, 3), distributions, 1).strategy == "local"
    assert _layout.plan_layout((5, 4, 3), distributions, 1, forced=True).strategy == "distributed"


def test_local_recipe_slices_the_replicated_operands():
    layout = _layout.plan_layout((7, 4, 10), (Replicated(), Replicated(), Slab.Y), 4)
    # N = 10 over 4 ranks in blocks of 3: rank 2 holds columns 6:9
    assert _layout.local_recipe(layout, 2) == (slice(None), slice(6, 9), slice(6, 9))
    layout = _layout.plan_layout((7, 4, 10), (Replicated(), Replicated(), Slab.X), 4)
    assert _layout.local_recipe(layout, 3) == (slice(6, 7), slice(None), slice(None))
    layout = _layout.plan_layout((7, 4, 10), (Replicated(), Slab.Y, Slab.Y), 4)
    assert _layout.local_recipe(layout, 1) == (slice(None), slice(None), slice(3, 6))


# -- the mapping onto cuBLASMp ---------------------------------------------------------------------------------


def test_row_parallel_descriptors():
    """a (5, 6) in column slabs, b (6, 4) in row slabs, the result replicated, over 2 ranks."""
    layout = _layout.plan_layout((5, 6, 4), (Slab.Y, Slab.X, Replicated()), 2)
    assert layout.gather == ((0, 3), (3, 5))  # the result's row blocks, all-gathered
    calls = [_layout.cublasmp_call(layout, rank) for rank in range(2)]
    for rank, call in enumerate(calls):
        assert (call.m, call.n, call.k, call.transa, call.transb) == (4, 5, 6, "N", "N")
        # cuBLASMp's A is b^T (4 x 6): b's row slabs are its column blocks of 3 on a 1 x 2 grid
        assert call.a == _layout.MpMatrix(4, 6, 4, 3, 0, 0, 4, 1, 2, "COL_MAJOR", 0, 0)
        # its B is a^T (6 x 5): a's column slabs are its row blocks of 3 on a 2 x 1 grid
        assert call.b == _layout.MpMatrix(6, 5, 3, 3, 0, 0, 3, 2, 1, "COL_MAJOR", 0, 0)
        # D^T (4 x 5): rank r's rows 3r.. of the whole result, a view at element 12 r with lld N
        assert call.d == _layout.MpMatrix(4, 5, 4, 3, 0, 0, 4, 1, 2, "COL_MAJOR", 0, 12 * rank)


def test_block_cyclic_grid_is_transposed():
    """A user grid (1, 2) with ranks in row-major order is cuBLASMp's (2, 1) column-major grid."""
    distribution = BlockCyclic((1, 2), (2, 2))
    layout = _layout.plan_layout((5, 6, 7), (distribution,) * 3, 2)
    calls = [_layout.cublasmp_call(layout, rank) for rank in range(2)]
    assert [c.b for c in calls] == [_layout.MpMatrix(6, 5, 2, 5, 0, 0, lld, 2, 1, "COL_MAJOR", 0, 0)
                                    for lld in (4, 2)]  # a^T: a's columns 0, 1, 4, 5 and 2, 3
    assert [c.a for c in calls] == [_layout.MpMatrix(7, 6, 2, 2, 0, 0, lld, 2, 1, "COL_MAJOR", 0, 0)
                                    for lld in (4, 3)]
    # one 1-D grid for all three: the result gets a second grid object (cuBLASMp would run SUMMA)
    assert [c.d for c in calls] == [_layout.MpMatrix(7, 5, 2, 5, 0, 0, lld, 2, 1, "COL_MAJOR", 1, 0)
                                    for lld in (4, 3)]
    assert calls[0].grid_keys == ((2, 1, "COL_MAJOR", 0), (2, 1, "COL_MAJOR", 1))


def test_unsupported_combinations_name_distributions():
    mismatched = (BlockCyclic((1, 2), (1, 1)), BlockCyclic((2, 1), (2, 1)), BlockCyclic((1, 2), (1, 1)))
    with pytest.raises(UnsupportedLayoutError, match="^distributions: a and b split K in blocks of 1 and 2"):
        _layout.plan_layout((4, 8, 4), mismatched, 2)
    cyclic = BlockCyclic((2, 2), (1, 1))
    with pytest.raises(UnsupportedLayoutError, match="^distributions: the Replicated a"):
        _layout.plan_layout((6, 8, 6), (Replicated(), cyclic, cyclic), 4)
    with pytest.raises(UnsupportedLayoutError, match="^distributions: a Replicated result"):
        _layout.plan_layout((9, 4, 4), (BlockCyclic((2, 1), (2, 4)), Slab.X, Replicated()), 2)


def _read(desc, rank):
    """{(global row, global column): offset in the rank's buffer} of a cuBLASMp descriptor, by
    ScaLAPACK's definition: column-major local blocks, process (r % nprow, r // nprow)."""
    prow, pcol = rank % desc.nprow, rank // desc.nprow
    rows = [i for i in range(desc.m) if (i // desc.mb) % desc.nprow == prow]
    cols = [j for j in range(desc.n) if (j // desc.nb) % desc.npcol == pcol]
    assert desc.lld >= max(1, len(rows))
    return {(gi, gj): desc.offset + i + j * desc.lld for j, gj in enumerate(cols) for i, gi in enumerate(rows)}


def _owned(n, block, coord, procs):
    return [i for i in range(n) if (i // block) % procs == coord]


def _piece(x, distribution, rank, world_size):
    rows, cols = x.shape
    if isinstance(distribution, Replicated):
        return x
    if isinstance(distribution, Slab):
        grid, blocks = ((world_size, 1), (-(-rows // world_size), cols)) if distribution is Slab.X else \
            ((1, world_size), (rows, -(-cols // world_size)))
    else:
        grid, blocks = distribution.process_grid, distribution.block_shape
    i, j = divmod(rank, grid[1])
    return x[np.ix_(_owned(rows, max(1, blocks[0]), i, grid[0]), _owned(cols, max(1, blocks[1]), j, grid[1]))]


def _simulate(shape, distributions, world_size, rng):
    """Run the product as cuBLASMp would from every rank's descriptors, and compare every rank's
    result piece with numpy's."""
    m, k, n = shape
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    layout = _layout.plan_layout(shape, distributions, world_size, forced=True)
    calls = [_layout.cublasmp_call(layout, rank) for rank in range(world_size)]
    pieces = [(_piece(a, distributions[0], r, world_size).reshape(-1),  # the C-ordered memory
               _piece(b, distributions[1], r, world_size).reshape(-1)) for r in range(world_size)]
    a_mp, b_mp = np.full((n, k), np.nan), np.full((k, m), np.nan)  # b^T and a^T, rebuilt
    for rank, call in enumerate(calls):
        assert call.a.mb == call.d.mb and call.a.nb == call.b.mb and call.b.nb == call.d.nb  # PBLAS NN
        for target, desc, memory in ((a_mp, call.a, pieces[rank][1]), (b_mp, call.b, pieces[rank][0])):
            for (i, j), offset in _read(desc, rank).items():
                assert np.isnan(target[i, j])  # every element from exactly one rank
                target[i, j] = memory[offset]
    assert np.array_equal(a_mp, b.T) and np.array_equal(b_mp, a.T)
    d_mp = a_mp @ b_mp
    replicated = isinstance(distributions[2], Replicated)
    outputs = []
    for rank, call in enumerate(calls):
        buffer = np.full(m * n if replicated else _piece(np.empty((m, n)), distributions[2], rank, world_size).size,
                         np.nan)
        for (i, j), offset in _read(call.d, rank).items():
            buffer[offset] = d_mp[i, j]
        outputs.append(buffer)
    d = a @ b
    for rank in range(world_size):
        if replicated:  # the row blocks all-gathered
            result = np.concatenate([outputs[r].reshape(m, n)[start:stop] for r, (start, stop) in
                                     enumerate(layout.gather)])
        else:
            expected_shape = _piece(d, distributions[2], rank, world_size).shape
            result = outputs[rank].reshape(expected_shape)
        np.testing.assert_allclose(result, _piece(d, distributions[2], rank, world_size), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_descriptors_reproduce_the_product(world_size, rng):
    """Every combination of slabs and replicated matrices, and block-cyclic ones, over uneven shapes."""
    grids = [(p, world_size // p) for p in range(1, world_size + 1) if world_size % p == 0]
    options = [Slab.X, Slab.Y, Replicated()] + [BlockCyclic(grid, (2, 2)) for grid in grids]
    served = 0
    for shape in ((7, 5, 6), (2, 9, 3)):
        for distributions in itertools.product(options, repeat=3):
            try:
                _simulate(shape, distributions, world_size, rng)
                served += 1
            except UnsupportedLayoutError:
                kinds = {type(d) for d in distributions}
                assert BlockCyclic in kinds and world_size > 1, distributions  # slabs and replicas always run
    assert served >= 27 * 2


# -- the GPU runner against a model of cuBLASMp -----------------------------------------------------------


class _Model:
    """cuBLASMp, NCCL and the epilog kernel on host memory, for every simulated rank of one world:
    each rank's runner plans (its pointers and descriptors are recorded), then executes; the model's
    matmul reads every rank's pieces by ScaLAPACK's rules and writes this rank's piece; the NCCL
    receives are matched with the sends once every rank has run."""

    def __init__(self, monkeypatch):
        from nvmathx._bindings import cublasmp, nccl
        from nvmathx._core.tensor._numpy import NumpyAdapter
        from nvmathx.distributed.linalg import _gpu

        self.objects, self.inputs, self.sends, self.receives, self.rank = {}, {}, [], [], 0
        for name, fake in {"create": lambda stream: 1, "stream_set": lambda handle, stream: None,
                           "destroy": lambda handle: None, "grid_create": self._grid, "grid_destroy": lambda g: None,
                           "matmul_descriptor_create": lambda compute_type: 2,
                           "matmul_descriptor_destroy": lambda desc: None,
                           "matmul_descriptor_set": lambda desc, attribute, value: None,
                           "matrix_descriptor_create": self._descriptor,
                           "matrix_descriptor_destroy": lambda desc: None, "matmul_buffer_size": self._sizes,
                           "matmul": self._matmul}.items():
            monkeypatch.setattr(cublasmp, name, fake)
        for name, fake in {"group_start": lambda: None, "group_end": lambda: None,
                           "send_bytes": lambda *args: self.sends.append((self.rank, *args)),
                           "recv_bytes": lambda *args: self.receives.append((self.rank, *args))}.items():
            monkeypatch.setattr(nccl, name, fake)
        monkeypatch.setattr(_gpu, "device", type("Device", (), {"ensure_device": staticmethod(lambda d: None)}))
        monkeypatch.setattr(_gpu, "prepare", lambda device_id, dtype: "kernel")
        monkeypatch.setattr(_gpu, "bias_activation", self._kernel)
        monkeypatch.setattr(_gpu, "Workspace", type("Workspace", (), {
            "__init__": lambda self, *args: None, "ensure": lambda self, nbytes, stream: 0,
            "release": lambda self: None}))

        def result_allocator(adapter, shape, dtype, device_id, **ignored):
            def allocate(stream, operand=None):
                result = np.full(shape, np.nan, dtype)
                return result, result.ctypes.data
            return allocate

        monkeypatch.setattr(NumpyAdapter, "result_allocator", result_allocator)

    @staticmethod
    def _memory(pointer, count):
        import ctypes

        return np.frombuffer((ctypes.c_char * (count * 8)).from_address(pointer), np.float64)

    def _grid(self, nprow, npcol, layout, comm):
        self.objects[len(self.objects) + 10] = (nprow, npcol)
        return len(self.objects) + 9

    def _descriptor(self, m, n, mb, nb, rsrc, csrc, lld, data_type, grid):
        nprow, npcol = self.objects[grid]
        self.objects[len(self.objects) + 10] = _layout.MpMatrix(m, n, mb, nb, rsrc, csrc, lld, nprow, npcol,
                                                                "COL_MAJOR", 0, 0)
        return len(self.objects) + 9

    def _sizes(self, handle, desc, m, n, k, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc):
        self.inputs[self.rank] = ((a, a_desc), (b, b_desc), (c, c_desc))
        return 0, 0

    def _whole(self, which, shape):
        whole = np.full(shape, np.nan)
        for rank, inputs in self.inputs.items():
            pointer, desc = inputs[which]
            elements = _read(self.objects[desc], rank)
            if elements:
                memory = self._memory(pointer, max(elements.values()) + 1)
                for (i, j), offset in elements.items():
                    whole[i, j] = memory[offset]
        return whole

    def _matmul(self, handle, desc, m, n, k, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, *work):
        assert self.inputs[self.rank][:2] == ((a, a_desc), (b, b_desc))  # the planned pieces
        product = self._memory(alpha, 1)[0] * (self._whole(0, (m, k)) @ self._whole(1, (k, n)))
        if c:
            product = product + self._memory(beta, 1)[0] * self._whole(2, (m, n))
        elements = _read(self.objects[d_desc], self.rank)
        if elements:
            memory = self._memory(d, max(elements.values()) + 1)
            for (i, j), offset in elements.items():
                memory[offset] = product[i, j]

    def _kernel(self, kernel, stream, pointer, bias, rows, cols, ld, columns, activation):
        block, procs, coord = columns
        for row in range(rows):
            values = self._memory(pointer + row * ld * 8, cols)
            if bias and cols:
                columns_of = [((j // block) * procs + coord) * block + j % block for j in range(cols)]
                values += self._memory(bias, max(columns_of) + 1)[columns_of]
            if activation == "relu":
                values[:] = np.maximum(values, 0)

    def settle(self):
        import ctypes

        for rank, pointer, nbytes, peer, *_ in self.receives:
            (send,) = [s for s in self.sends if s[0] == peer and s[3] == rank]
            assert send[2] == nbytes
            ctypes.memmove(pointer, send[1], nbytes)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_gpu_runner_against_a_model_of_cublasmp(world_size, monkeypatch, rng):
    """The cuBLASMp path's pointers, views, descriptors, epilog columns and all-gather, on host
    memory: every rank's piece of relu(alpha a @ b + beta c + bias) is numpy's."""
    from nvmathx._core.tensor import wrap_operand
    from nvmathx.distributed.linalg import _gpu, _options, _problem

    model = _Model(monkeypatch)
    from distributed._guards import PassThroughGuard

    context = type("Context", (), {"world_size": world_size, "device_id": 0, "nccl_comm": 7, "nccl_handle": 7,
                                   "nccl_guard": PassThroughGuard(7), "blas_guard": PassThroughGuard(8),
                                   "on_finalize": lambda self, release: None})
    stream = type("Stream", (), {"handle": 5})()
    options = _options.MatmulOptions(force_distributed=True)
    grids = [(p, world_size // p) for p in range(1, world_size + 1) if world_size % p == 0]
    choices = [Slab.X, Slab.Y, Replicated(), BlockCyclic(grids[-1], (2, 2))]
    ran = 0
    for number, distributions in enumerate(itertools.product(choices, repeat=3)):
        m, k, n = (7, 5, 6) if number % 2 else (3, 8, 2)
        a, b, c, bias = (rng.standard_normal(s) for s in ((m, k), (k, n), (m, n), (n,)))
        operands = [{"a": wrap_operand(_piece(a, distributions[0], r, world_size).copy(), "a"),
                     "b": wrap_operand(_piece(b, distributions[1], r, world_size).copy(), "b"),
                     "c": wrap_operand(_piece(c, distributions[2], r, world_size).copy(), "c")}
                    for r in range(world_size)]
        descriptions = [_problem.describe(o["a"], o["b"], o["c"], distributions, 1.5, -0.5, options) for o in operands]
        try:
            problems = [_problem.resolve(descriptions, r, forced=True) for r in range(world_size)]
        except UnsupportedLayoutError:
            continue
        model.inputs, model.sends, model.receives, runners = {}, [], [], []
        for rank in range(world_size):
            model.rank = rank
            ctx = context()
            ctx.rank, ctx.caches = rank, {}
            runner = _gpu.CublasMpRunner(problems[rank], ctx, operands[rank], wrap_operand(bias, "bias"), "RELU_BIAS",
                                         1.5, -0.5, options, stream)
            runner.prepare()
            runner.finish()
            runners.append(runner)
        results = []
        for rank, runner in enumerate(runners):
            model.rank = rank
            results.append(runner.execute(stream))
            runner.free()
        model.settle()
        expected = np.maximum(1.5 * a @ b - 0.5 * c + bias, 0)
        for rank in range(world_size):
            np.testing.assert_allclose(results[rank], _piece(expected, distributions[2], rank, world_size),
                                       rtol=1e-12, atol=1e-12, err_msg=f"rank {rank}, {distributions}")
        ran += 1
    assert ran >= 27
