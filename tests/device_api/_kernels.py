"""Kernels the device_api tests compile (on the CPU) and launch (on a GPU).

Each factory returns a plain Python function whose ``cuda`` is unbound: ``compiler.bind`` (tests/helpers/
compilers.py) gives it numba-cuda-mlir's or numba-cuda's, as a kernel author's import line would; the
kernel body is the same for both. Rows of ``x``/``y`` are transforms; every thread of a block calls
``execute``.
"""

cuda = None  # each kernel's compiler module, set by Compiler.bind


def block_c2c(fft, scale=1):
    """Rows of ``x`` transformed into ``y``, times ``scale`` (a constant; 1 compiles to no multiply)."""
    scaled = scale != 1

    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        active = row < x.shape[0]
        for i in range(fft.elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.size:
                regs[i] = x[row, index]
        fft.execute(regs, shared)
        for i in range(fft.elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.size and scaled:
                y[row, index] = regs[i] * scale
            elif active and index < fft.size:
                y[row, index] = regs[i]

    return kernel


def block_rows(fft):
    """Rows of ``x`` transformed into rows of ``y`` through ``fft.load`` / ``fft.store`` (any Block
    transform: reals on the real side of r2c/c2r, in either real mode)."""

    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        fft.load(x, regs, row)
        fft.execute(regs, shared)
        fft.store(regs, y, row)

    return kernel


def block_c2c_vector_rows(fft):
    """``x`` (1-D: one row) transformed into ``y`` (1-D) through load/store of row 0; the block's
    other transforms ask for row 1, which a 1-D array does not have (nothing read or written)."""

    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.threadIdx.y
        fft.load(x, regs, row)
        fft.execute(regs, shared)
        fft.store(regs, y, row)

    return kernel


def block_c2c_shared(fft):
    def kernel(x, y):
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        local = cuda.threadIdx.y
        row = cuda.blockIdx.x * fft.ffts_per_block + local
        active = row < x.shape[0]
        for index in range(cuda.threadIdx.x, fft.size, fft.block_dim[0]):
            if active:
                shared[local * fft.size + index] = x[row, index]
        cuda.syncthreads()
        fft.execute(shared)
        cuda.syncthreads()
        for index in range(cuda.threadIdx.x, fft.size, fft.block_dim[0]):
            if active:
                y[row, index] = shared[local * fft.size + index]

    return kernel


def block_r2c(fft):
    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        real = regs.view(fft.input_type)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        active = row < x.shape[0]
        for i in range(fft.input_elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.input_length:
                real[i] = x[row, index]
        fft.execute(regs, shared)
        for i in range(fft.output_elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.output_length:
                y[row, index] = regs[i]

    return kernel


def block_c2r(fft):
    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        real = regs.view(fft.output_type)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        active = row < x.shape[0]
        for i in range(fft.input_elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.input_length:
                regs[i] = x[row, index]
        fft.execute(regs, shared)
        for i in range(fft.output_elements_per_thread):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.output_length:
                y[row, index] = real[i]

    return kernel


def _positions(fft, length, per_thread):
    """Register slots a thread walks for ``length`` positions: a folded complex side has one more
    position than its elements per thread say (thread 0 holds element size // 2)."""
    return max(per_thread, -(-length // fft.stride))


def block_r2c_folded(fft):
    """Rows of real ``x`` into rows of ``y`` with ``real_mode="folded"``: register ``i`` holds reals
    ``2p`` and ``2p + 1`` of position ``p = threadIdx.x + i * stride``."""
    loads = _positions(fft, fft.input_length, fft.input_elements_per_thread)
    stores = _positions(fft, fft.output_length, fft.output_elements_per_thread)

    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        active = row < x.shape[0]
        for i in range(loads):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.input_length:
                regs[i] = complex(x[row, 2 * index], x[row, 2 * index + 1])
            else:
                regs[i] = 0
        fft.execute(regs, shared)
        for i in range(stores):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.output_length:
                y[row, index] = regs[i]

    return kernel


def block_c2r_folded(fft):
    """Rows of the half spectrum ``x`` into real rows of ``y`` with ``real_mode="folded"``."""
    loads = _positions(fft, fft.input_length, fft.input_elements_per_thread)
    stores = _positions(fft, fft.output_length, fft.output_elements_per_thread)

    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        shared = cuda.shared.array(0, dtype=fft.value_type, alignment=16)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        active = row < x.shape[0]
        for i in range(loads):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.input_length:
                regs[i] = x[row, index]
            else:
                regs[i] = 0
        fft.execute(regs, shared)
        for i in range(stores):
            index = cuda.threadIdx.x + i * fft.stride
            if active and index < fft.output_length:
                y[row, 2 * index] = regs[i].real
                y[row, 2 * index + 1] = regs[i].imag

    return kernel


def thread_c2c(fft):
    def kernel(x, y):
        regs = cuda.local.array(fft.storage_size, dtype=fft.value_type, alignment=fft.alignment)
        row = cuda.grid(1)
        if row < x.shape[0]:
            for i in range(fft.size):
                regs[i] = x[row, i]
            fft.execute(regs)
            for i in range(fft.size):
                y[row, i] = regs[i]

    return kernel


def block_gemm(gemm):
    def kernel(a, b, c, alpha, beta):
        smem = cuda.shared.array(0, dtype=gemm.value_type, alignment=16)
        sa = smem[: gemm.a_size]
        sb = smem[gemm.a_size : gemm.a_size + gemm.b_size]
        sc = smem[gemm.a_size + gemm.b_size : gemm.a_size + gemm.b_size + gemm.c_size]
        t = cuda.threadIdx.x + cuda.threadIdx.y * gemm.block_dim[0]
        for i in range(t, gemm.m * gemm.k, gemm.block_size):
            sa[(i // gemm.k) * gemm.lda + i % gemm.k] = a[i // gemm.k, i % gemm.k]
        for i in range(t, gemm.k * gemm.n, gemm.block_size):
            sb[(i // gemm.n) * gemm.ldb + i % gemm.n] = b[i // gemm.n, i % gemm.n]
        for i in range(t, gemm.m * gemm.n, gemm.block_size):
            sc[(i // gemm.n) * gemm.ldc + i % gemm.n] = c[i // gemm.n, i % gemm.n]
        cuda.syncthreads()
        gemm.execute(alpha, sa, sb, beta, sc)
        cuda.syncthreads()
        for i in range(t, gemm.m * gemm.n, gemm.block_size):
            c[i // gemm.n, i % gemm.n] = sc[(i // gemm.n) * gemm.ldc + i % gemm.n]

    return kernel


# a thread's fill: its state (``{state}``), ``{init}``, then out[thread, :] from generate
_FILL_SOURCE = """
def kernel({parameters}):
    thread = cuda.grid(1)
    if thread < out.shape[0]:
        {state}
        {init}
        values = cuda.local.array(rng.values_per_call, dtype=rng.value_type)
        for start in range(0, out.shape[1], rng.values_per_call):
            rng.generate(state, values)
            for i in range(rng.values_per_call):
                if start + i < out.shape[1]:
                    out[thread, start + i] = values[i]
"""


def _fill_kernel(rng, label, **parts):
    namespace = {"cuda": cuda, "rng": rng}
    exec(compile(_FILL_SOURCE.format(**parts), f"<{label} kernel {rng.generator}>", "exec"), namespace)
    return namespace["kernel"]


def random_fill(rng, initialise=True):
    """Thread ``t`` initialises ``states[t]`` (seed, subsequence ``t``, offset), or with
    ``initialise=False`` continues from it (a later launch), and fills ``out[t, :]``."""
    return _fill_kernel(rng, "fill", parameters="states, out, seed, offset", state="state = states[thread]",
                        init="rng.init(seed, thread, offset, state)" if initialise else "pass")


def sobol_fill(rng):
    """Thread ``t`` initialises a local state on dimension ``t`` from point ``offset`` (the
    direction vectors and, scrambled, the constants of every dimension) and fills ``out[t, :]``."""
    tables = "vectors, constants" if rng.generator.startswith("scrambled_") else "vectors"
    return _fill_kernel(rng, "sobol", parameters="vectors, constants, out, offset",
                        state="state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, "
                              "alignment=rng.state_alignment)",
                        init=f"rng.init(thread, {tables}, offset, state)")


def random_skips(rng):
    """Thread ``t``: a local state at (seed, 0, 0), skipped ``t`` subsequences and ``skip`` values,
    then one generate into ``out[t, :]``."""

    def kernel(out, seed, skip):
        thread = cuda.grid(1)
        if thread < out.shape[0]:
            state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, alignment=rng.state_alignment)
            rng.init(seed, 0, 0, state)
            rng.skip_subsequence(state, thread)
            rng.skip_offset(state, skip)
            values = cuda.local.array(rng.values_per_call, dtype=rng.value_type)
            rng.generate(state, values)
            for i in range(rng.values_per_call):
                out[thread, i] = values[i]

    return kernel


# execute's arguments -> the kernel's shared arrays (c takes b's place: unmqr has no b)
_SOLVER_ARRAYS = {"a": "sa", "b": "sb", "c": "sb", "ipiv": "sipiv", "tau": "stau", "info": "sinfo"}

_SOLVER_SOURCE = """
def kernel(a, b, ipiv, tau, info):
    block = cuda.blockIdx.x
    thread = (cuda.threadIdx.x + cuda.threadIdx.y * solver.block_dim[0]
              + cuda.threadIdx.z * solver.block_dim[0] * solver.block_dim[1])
    sa = cuda.shared.array({a}, dtype=solver.value_type, alignment=16)
    sb = cuda.shared.array({b}, dtype=solver.value_type, alignment=16)
    sipiv = cuda.shared.array({ipiv}, dtype=np.int32)
    stau = cuda.shared.array({tau}, dtype=solver.value_type)
    sinfo = cuda.shared.array({info}, dtype=np.int32)
    for i in range(thread, {a}, solver.block_size):
        sa[i] = a[block, i]
    for i in range(thread, {b}, solver.block_size):
        sb[i] = b[block, i]
    cuda.syncthreads()
    solver.execute({call})
    cuda.syncthreads()
    for i in range(thread, {a}, solver.block_size):
        a[block, i] = sa[i]
    for i in range(thread, {b}, solver.block_size):
        b[block, i] = sb[i]
    for i in range(thread, {ipiv}, solver.block_size):
        ipiv[block, i] = sipiv[i]
    for i in range(thread, {tau}, solver.block_size):
        tau[block, i] = stau[i]
    for i in range(thread, {info}, solver.block_size):
        info[block, i] = sinfo[i]
"""


def solver_kernel(solver):
    """Block ``j`` copies row ``j`` of each global array (a, b or c, ipiv, tau, info: 2-D, one row per
    block, all of a block's batches) into shared memory, calls ``execute`` and copies everything back.
    Launch with ``solver.block_dim``. Static shared arrays only (the tests' problems fit in 48 KiB):
    numba-cuda-mlir 0.6 places a dynamic shared array over a kernel's static ones, so a kernel takes
    one kind or the other (examples/device_batched_cholesky.py carves everything from one dynamic
    array)."""
    import numpy as np

    source = _SOLVER_SOURCE.format(
        a=solver.a_size, b=max(solver.b_size + solver.c_size, 1), ipiv=max(solver.ipiv_size, 1),
        tau=max(solver.tau_size, 1), info=max(solver.info_size, 1),
        call=", ".join(_SOLVER_ARRAYS[name] for name in solver.arguments))
    namespace = {"cuda": cuda, "np": np, "solver": solver}
    exec(compile(source, f"<solver kernel {solver.function}>", "exec"), namespace)
    return namespace["kernel"]
