"""``FFT``: a cuFFTDx device function for Numba kernels, described on the host.

Construction asks libmathdx whether cuFFTDx implements the descriptor (``cufftdxIsSupported``),
then reads every trait (milliseconds, no code generation); blocks that no launch on the target
could run (too many threads or too much shared memory) are refused too. Code is generated when a kernel that calls
``execute`` is compiled, once per call form (registers + shared scratch, or data in shared memory), and is read
from the on-disk cache when an earlier process generated it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from .._bindings import mathdx
from .._codegen import descriptors
from .._codegen.target import Target, max_shared_memory_per_block, resolve_target
from .._core.errors import OptionsError
from . import _compilers

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .._codegen.cache import CodeEntry

__all__ = ["FFT"]

_PRECISIONS = {np.dtype(np.float32): mathdx.Precision.F32, np.dtype(np.float64): mathdx.Precision.F64}
_FFT_TYPES = {"c2c": mathdx.FftType.C2C, "r2c": mathdx.FftType.R2C, "c2r": mathdx.FftType.C2R}
_DIRECTIONS = {"forward": mathdx.FftDirection.FORWARD, "inverse": mathdx.FftDirection.INVERSE}
_EXECUTIONS = {"block": "Block", "thread": "Thread"}
_REAL_MODES = {"normal": mathdx.FftRealMode.NORMAL, "folded": mathdx.FftRealMode.FOLDED}
_VALUE_TYPES: dict[Any, np.dtype] = {
    mathdx.ValueType.R_32F: np.dtype(np.float32),
    mathdx.ValueType.C_32F: np.dtype(np.complex64),
    mathdx.ValueType.R_64F: np.dtype(np.float64),
    mathdx.ValueType.C_64F: np.dtype(np.complex128),
}
_T = mathdx.FftTrait


def normalize_precision(precision) -> np.dtype:
    """np.float32 / np.float64 (or their names); complex or half precision is refused with a hint."""
    try:
        dtype = np.dtype(precision)
    except TypeError:
        raise OptionsError("precision", f"expected np.float32 or np.float64 (got {precision!r})") from None
    if dtype.kind == "c":
        real = np.dtype(dtype.char.lower())
        raise OptionsError(
            "precision", f"expected the real precision, {real.name} for {dtype.name} data (got {dtype.name})"
        )
    if dtype not in _PRECISIONS:
        raise OptionsError("precision", f"expected float32 or float64, half precision is not supported (got {dtype})")
    return dtype


def normalize_direction(direction, fft_type: str) -> str:
    """The direction a transform type allows: r2c is forward, c2r inverse, c2c must say."""
    implied = {"r2c": "forward", "c2r": "inverse"}.get(fft_type)
    if direction is None:
        if implied is None:
            raise OptionsError("direction", "a c2c FFT needs direction='forward' or 'inverse'")
        return implied
    if not isinstance(direction, str) or direction.lower() not in _DIRECTIONS:
        raise OptionsError("direction", f"expected 'forward' or 'inverse' (got {direction!r})")
    direction = direction.lower()
    if implied is not None and direction != implied:
        raise OptionsError("direction", f"an {fft_type} FFT is always {implied!r} (got {direction!r})")
    return direction


def _knob(value, argument: str):
    if isinstance(value, str) and value == "suggested":
        return None
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise OptionsError(argument, f"expected a positive int or 'suggested' (got {value!r})")
    return int(value)


def _choice(value, argument: str, table: dict) -> str:
    key = value.lower() if isinstance(value, str) else value
    if key not in table:
        raise OptionsError(argument, f"expected one of {sorted(table)} (got {value!r})")
    return key


def _is_valid(descriptor: descriptors.Descriptor) -> bool:
    """Whether cuFFTDx implements ``descriptor`` (which sets ``API``, as libmathdx 0.3.1 requires).

    "Not implemented" is the answer False; a libmathdx call that fails raises its MathdxError.
    """
    with descriptors.open_descriptor(descriptor) as handle:
        return handle.is_supported()


@_compilers.descriptor
class FFT:
    """A cuFFTDx FFT that ``numba.cuda.jit`` kernels call as ``fft.execute(...)``.

    Parameters
    ----------
    size : int
        Points per transform (at least 2). The largest size depends on precision, execution
        and architecture (Block C2C on sm_90: 32768 in float32, 16384 in float64).
    precision : numpy dtype or name
        ``np.float32`` or ``np.float64``: the precision of the real and imaginary parts.
    fft_type : {"c2c", "r2c", "c2r"}
    direction : {"forward", "inverse"}, optional
        Required for c2c; r2c is always forward and c2r inverse. Transforms are unnormalised.
    execution : {"Block", "Thread"}
        ``"Block"``: a CUDA block computes ``ffts_per_block`` transforms together, with shared
        memory as scratch. ``"Thread"``: each thread computes a whole small transform in registers.
    elements_per_thread, ffts_per_block : int or "suggested"
        Block-execution knobs. ``"suggested"`` takes cuFFTDx's choice. ``valid_knobs()`` lists
        tuned pairs.
    sm : tuple, int, str or None
        Target architecture, e.g. ``(9, 0)``; ``None`` means the current device.
    real_mode : {"normal", "folded"}
        How r2c and c2r hold the real side (c2c takes only ``"normal"``). ``"normal"``: as reals, one per
        position. ``"folded"``: as complex values each holding two consecutive reals
        (``x[2p] + 1j * x[2p + 1]`` at position ``p``, ``input_length`` or ``output_length`` being
        ``size // 2``); cuFFTDx then computes a transform of half the size, with half the threads
        and shared memory. Power-of-2 sizes from 4 only. In both modes the complex side holds ``size // 2 + 1``
        values (cuFFTDx's natural layout).

    Raises
    ------
    OptionsError
        When an argument is malformed or the descriptor has no implementation; the message names
        the argument (``size`` when the size is out of range, else the knob that is not legal).

    Notes
    -----
    Host attributes are also compile-time constants inside kernels: ``value_type`` (a numpy
    scalar type on the host, the compiler's number class in a kernel),
    ``input_type``, ``output_type``, ``storage_size``, ``stride``, ``elements_per_thread``,
    ``ffts_per_block``, ``block_dim``, ``shared_memory_size``, ``size``, ``input_length``,
    ``output_length``, ``input_elements_per_thread``, ``output_elements_per_thread``,
    ``alignment``. In a kernel:

    - Block: ``fft.execute(thread_data, shared)``, with ``thread_data =
      cuda.local.array(fft.storage_size, fft.value_type, alignment=fft.alignment)`` holding
      element ``threadIdx.x + i * fft.stride`` of transform ``threadIdx.y`` in ``thread_data[i]``,
      and ``shared = cuda.shared.array(0, fft.value_type, alignment=16)``; launch with
      ``block_dim`` threads and ``shared_memory_size`` bytes of dynamic shared memory.
    - Block, c2c only: ``fft.execute(shared)`` with transform ``j`` at ``shared[j * size:]``;
      launch with ``shared_api_memory_size`` bytes.
    - Thread: ``fft.execute(thread_data)`` with element ``i`` in ``thread_data[i]``.
    - Block: ``fft.load(source, thread_data, row)`` and ``fft.store(thread_data,
      destination, row)`` copy row ``row`` of a C-contiguous 2-D array (a 1-D array is one row) to
      and from ``thread_data`` in the order above (r2c loads real rows and stores ``size // 2 + 1``
      complex values, c2r the reverse, in either real mode); the row of a thread is typically
      ``cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y``. A row outside the array is
      neither read nor written; positions past a row's length load as zero and are not stored. Like
      ``execute``, the copy takes the launch to be ``block_dim`` (``threadIdx.x < fft.stride``):
      its bounds checks rely on it. The copy is generated CUDA C++ with vector loads and stores,
      the same instructions under either compiler (numba-cuda-mlir indexes arrays through run-time
      strides, which is slower).

    Real data (r2c input, c2r output) sits in ``thread_data.view(fft.input_type)`` (or
    ``output_type``) at the same positions. Generated code is cached on disk (see
    :func:`cache_info`).

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.device_api import FFT
    >>> fft = FFT(1024, np.float32, direction="forward", elements_per_thread=8, ffts_per_block=2, sm=(9, 0))
    >>> fft.storage_size, fft.stride, fft.block_dim
    (8, 128, (128, 2, 1))
    """

    # the traits that kernels read, as compile-time constants (both compilers' registrations)
    _kernel_attributes = (
        "size", "value_type", "input_type", "output_type", "storage_size", "stride", "elements_per_thread",
        "ffts_per_block", "block_dim", "shared_memory_size", "shared_api_memory_size", "input_length",
        "output_length", "input_elements_per_thread", "output_elements_per_thread", "implicit_type_batching",
        "alignment", "max_threads_per_block",
    )  # fmt: skip

    def __init__(self, size: int, precision: DTypeLike, fft_type: str = "c2c", direction: str | None = None,
                 execution: str = "Block", elements_per_thread: int | str = "suggested",
                 ffts_per_block: int | str = "suggested", sm: str | int | tuple[int, int] | None = None,
                 real_mode: str = "normal") -> None:
        _compilers.register_imported()  # typed by the registry of each compiler imported by now
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 2:
            raise OptionsError("size", f"expected an int >= 2 (got {size!r})")
        self.size = int(size)
        self.precision = normalize_precision(precision)
        self.fft_type = _choice(fft_type, "fft_type", _FFT_TYPES)
        self.direction = normalize_direction(direction, self.fft_type)
        self.execution = _EXECUTIONS[_choice(execution, "execution", _EXECUTIONS)]
        self.real_mode = _choice(real_mode, "real_mode", _REAL_MODES)
        self.target: Target = resolve_target(sm)
        ept = _knob(elements_per_thread, "elements_per_thread")
        fpb = _knob(ffts_per_block, "ffts_per_block")
        if self.real_mode == "folded" and self.fft_type == "c2c":
            raise OptionsError("real_mode", "a c2c FFT has no real side to fold (real_mode applies to r2c and c2r)")
        if self.real_mode == "folded" and (self.size < 4 or self.size & (self.size - 1)):
            # libmathdx describes other sizes but cuFFTDx's code refuses them when it is generated
            raise OptionsError("real_mode", f"cuFFTDx folds power-of-2 sizes from 4 (got {self.size}); "
                                            "use real_mode='normal'")
        self._base = self._base_operators()
        self._check_supported(self._base, "size", self._size_message())
        if self.real_mode == "folded":
            self._base += (("REAL_FFT_OPTIONS", (int(mathdx.FftComplexLayout.NATURAL),
                                                 int(mathdx.FftRealMode.FOLDED))),)
            self._check_supported(self._base, "real_mode",
                                  f"cuFFTDx has no folded {self.size}-point {self.fft_type} in "
                                  f"{self.precision.name} with {self.execution} execution; use real_mode='normal'")
        if self.execution == "Thread":
            self._operators = self._thread_operators(ept, fpb)
        else:
            self._operators = self._block_operators(ept, fpb)
        self._read_traits()
        self._check_block_fits()
        self._codes: dict[str, CodeEntry] = {}

    # -- descriptor construction -----------------------------------------------------------

    def _base_operators(self) -> tuple:
        return (
            ("SIZE", self.size),
            ("PRECISION", int(_PRECISIONS[self.precision])),
            ("TYPE", int(_FFT_TYPES[self.fft_type])),
            ("DIRECTION", int(_DIRECTIONS[self.direction])),
            ("EXECUTION", int(mathdx.Execution.BLOCK if self.execution == "Block" else mathdx.Execution.THREAD)),
            ("SM", self.target.sm),
            # Traits and validity are those of the registers form; the shared form differs only here.
            ("API", int(mathdx.FftApi.LMEM)),
        )

    def _size_message(self) -> str:
        return (
            f"a {self.size}-point {self.fft_type} FFT in {self.precision.name} with {self.execution} execution "
            f"has no cuFFTDx implementation on {self.target.name} (Block C2C reaches 32768 points in float32 "
            "and 16384 in float64 on sm_90; Thread execution only small sizes)"
        )

    def _check_supported(self, operators: tuple, argument: str, message: str) -> None:
        if not _is_valid(("cufftdx", operators)):
            raise OptionsError(argument, message)

    def _thread_operators(self, ept, fpb) -> tuple:
        if ept not in (None, self.size):
            raise OptionsError(
                "elements_per_thread", f"Thread execution computes all {self.size} elements in one thread (got {ept})"
            )
        if fpb not in (None, 1):
            raise OptionsError("ffts_per_block", f"Thread execution computes one transform per thread (got {fpb})")
        return self._base

    def _block_operators(self, ept, fpb) -> tuple:
        operators = self._base
        if ept is not None:
            operators = operators + (("ELEMENTS_PER_THREAD", ept),)
            self._check_supported(operators, "elements_per_thread", self._knob_message("elements_per_thread", ept))
        if fpb is None:
            with descriptors.open_descriptor(("cufftdx", operators)) as handle:
                fpb = handle.trait(_T.SUGGESTED_FFTS_PER_BLOCK)
            if not _is_valid(("cufftdx", operators + (("FFTS_PER_BLOCK", fpb),))):
                fpb = 1
        operators = operators + (("FFTS_PER_BLOCK", fpb),)
        self._check_supported(operators, "ffts_per_block", self._knob_message("ffts_per_block", fpb))
        return operators

    def _knob_message(self, name: str, value: int) -> str:
        pairs = ", ".join(f"({e}, {f})" for e, f in self.valid_knobs())
        return (
            f"{name}={value} is not legal for a {self.size}-point {self.fft_type} FFT in {self.precision.name} "
            f"on {self.target.name}; tuned (elements_per_thread, ffts_per_block) pairs: {pairs}"
        )

    def _read_traits(self) -> None:
        with descriptors.open_descriptor(("cufftdx", self._operators)) as handle:
            self.elements_per_thread = handle.trait(_T.ELEMENTS_PER_THREAD)
            self.storage_size = handle.trait(_T.STORAGE_SIZE)
            self.stride = handle.trait(_T.STRIDE)
            self.input_length = handle.trait(_T.INPUT_LENGTH)
            self.output_length = handle.trait(_T.OUTPUT_LENGTH)
            self.input_elements_per_thread = handle.trait(_T.INPUT_ELEMENTS_PER_THREAD)
            self.output_elements_per_thread = handle.trait(_T.OUTPUT_ELEMENTS_PER_THREAD)
            self.implicit_type_batching = handle.trait(_T.IMPLICIT_TYPE_BATCHING)
            self._dtypes = tuple(
                _VALUE_TYPES[handle.value_type(t)] for t in (_T.VALUE_TYPE, _T.INPUT_TYPE, _T.OUTPUT_TYPE)
            )
            if self.execution == "Block":
                self.ffts_per_block = handle.trait(_T.FFTS_PER_BLOCK)
                self.block_dim: tuple[int, ...] | None = tuple(handle.traits(_T.BLOCK_DIM, 3))
                self.shared_memory_size = handle.trait(_T.SHARED_MEMORY_SIZE)
            else:
                self.ffts_per_block = 1
                self.block_dim = None
                self.shared_memory_size = 0

    def _check_block_fits(self) -> None:
        """cuFFTDx accepts any ffts_per_block; refuse blocks no launch could run."""
        if self.block_dim is None:  # Thread execution: no block to fit
            return
        threads = int(np.prod(self.block_dim))
        limit = max_shared_memory_per_block(self.target)
        if threads > 1024 or self.shared_memory_size > limit:
            raise OptionsError(
                "ffts_per_block",
                f"ffts_per_block={self.ffts_per_block} needs a block of {self.block_dim} threads and "
                f"{self.shared_memory_size} bytes of shared memory; {self.target.name} allows 1024 threads "
                f"and {limit} bytes per block",
            )

    # -- public traits ---------------------------------------------------------------------

    @property
    def value_dtype(self) -> np.dtype:
        """The numpy dtype of ``value_type`` (complex64 or complex128)."""
        return self._dtypes[0]

    @property
    def value_type(self) -> type[np.number]:
        """The numpy scalar type of one register element (``np.complex64`` or ``np.complex128``);
        inside a kernel, the compiler's number class of it (a ``dtype=`` for local and shared arrays)."""
        return self._dtypes[0].type

    @property
    def input_type(self) -> type[np.number]:
        """The numpy scalar type of one input element (``np.float32``/``np.float64`` for r2c)."""
        return self._dtypes[1].type

    @property
    def output_type(self) -> type[np.number]:
        """The numpy scalar type of one output element (``np.float32``/``np.float64`` for c2r)."""
        return self._dtypes[2].type

    @property
    def alignment(self) -> int:
        """Bytes to align ``thread_data`` to (cuFFTDx over-aligns complex values)."""
        return self._dtypes[0].itemsize

    @property
    def max_threads_per_block(self) -> int | None:
        """Threads in ``block_dim`` (None for Thread execution). Pass it to
        ``numba.cuda.jit(launch_bounds=...)``: the compiler then keeps registers within what a block
        of that size can hold, which large transforms need (16384 points in float64 uses 512 threads
        of 32 complex values each; without launch bounds the launch can fail with
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)."""
        return int(np.prod(self.block_dim)) if self.block_dim is not None else None

    @property
    def shared_api_memory_size(self) -> int:
        """Dynamic shared memory for ``execute(shared)``: the scratch, or all transforms if larger."""
        data = self.ffts_per_block * self.size * self._dtypes[0].itemsize
        return max(self.shared_memory_size, data)

    def valid_knobs(self) -> list[tuple[int, int]]:
        """cuFFTDx's tuned ``(elements_per_thread, ffts_per_block)`` pairs for this transform.

        Other legal combinations exist; the constructor accepts any that libmathdx implements.
        """
        if self.execution == "Thread":
            return [(self.size, 1)]
        knobs = (int(mathdx.FftKnob.ELEMENTS_PER_THREAD), int(mathdx.FftKnob.FFTS_PER_BLOCK))
        with descriptors.open_descriptor(("cufftdx", self._base)) as handle:
            return sorted(set(handle.knobs(knobs)))

    def descriptor(self, api: str = "registers") -> descriptors.Descriptor:
        """The descriptor (plain data) for one call form: ``"registers"`` or ``"shared"``."""
        if api not in ("registers", "shared"):
            raise OptionsError("api", f"expected 'registers' or 'shared' (got {api!r})")
        value = int(mathdx.FftApi.SMEM if api == "shared" else mathdx.FftApi.LMEM)
        return ("cufftdx", tuple((name, value if name == "API" else v) for name, v in self._operators))

    def code(self, api: str = "registers") -> CodeEntry:
        """The generated code (symbol and LTO-IR) for one call form, generating it if needed."""
        entry = self._codes.get(api)
        if entry is None:
            entry = self._codes[api] = descriptors.get_code(self.descriptor(api), self.target)
        return entry

    def _row_dtype(self, kind: str) -> np.dtype:
        """The element of the rows ``load`` reads (the input side) or ``store`` writes (the output side)."""
        real_side = self.fft_type != "c2c" and (self.fft_type == "r2c") == (kind == "load")
        return np.dtype(self.precision) if real_side else self.value_dtype

    def _row_code(self, kind: str) -> CodeEntry:
        """The generated code of ``load`` (``kind="load"``) or ``store``, kept like :meth:`code`'s."""
        entry = self._codes.get(f"rows-{kind}")
        if entry is None:
            from . import _rows

            entry = self._codes[f"rows-{kind}"] = _rows.row_code(self, kind)
        return entry

    def execute(self, *args: Any) -> NoReturn:
        """Run the FFT: only inside a ``numba.cuda.jit`` kernel (see the class Notes)."""
        raise RuntimeError("FFT.execute can only be called inside a numba.cuda.jit kernel")

    def load(self, source: Any, thread_data: Any, row: Any) -> NoReturn:
        """Copy row ``row`` of ``source`` into ``thread_data``: only inside a kernel (see the class Notes)."""
        raise RuntimeError("FFT.load can only be called inside a numba.cuda.jit kernel")

    def store(self, thread_data: Any, destination: Any, row: Any) -> NoReturn:
        """Copy ``thread_data`` into row ``row`` of ``destination``: only inside a kernel (see the class Notes)."""
        raise RuntimeError("FFT.store can only be called inside a numba.cuda.jit kernel")

    def _prefetch(self) -> None:
        """Start generating the registers form's code in another process (see ``descriptors.prefetch``)."""
        if "registers" not in self._codes and not self.__dict__.get("_prefetched"):
            self._prefetched = True  # typing reads the object many times: look at the disk once
            descriptors.prefetch(self.descriptor("registers"), self.target)

    @property
    def _numba_type_(self):
        # Read by a compiler's generic typeof only while its own registry lacks this class.
        return _compilers.unregistered_type(self)

    def __repr__(self) -> str:
        knobs = (f", elements_per_thread={getattr(self, 'elements_per_thread', '?')}"
                 f", ffts_per_block={getattr(self, 'ffts_per_block', '?')}")
        return (
            f"FFT(size={self.size}, precision={self.precision.name}, fft_type={self.fft_type!r}, "
            f"direction={self.direction!r}, execution={self.execution!r}"
            f"{knobs if self.execution == 'Block' else ''}, sm={self.target.name!r}"
            f"{', real_mode=' + repr(self.real_mode) if self.real_mode != 'normal' else ''})"
        )
