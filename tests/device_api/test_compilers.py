"""Which Numba compiler types a kernel, decided without importing either (no GPU needed)."""

import subprocess
import sys

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx._codegen import compilers as _compilers


@pytest.mark.parametrize(
    "module, compiler",
    [
        ("numba_cuda_mlir.numba_cuda.typing.typeof", "numba-cuda-mlir"),  # its vendored numba-cuda is its own
        ("numba_cuda_mlir", "numba-cuda-mlir"),
        ("numba.cuda.typing.typeof", "numba-cuda"),
        ("numba", "numba-cuda"),
        ("numba_cuda", None),
        ("numbax.cuda", None),
        ("user_script", None),
        ("", None),
    ],
)
def test_the_calling_module_names_the_compiler(module, compiler):
    assert _compilers.compiler_of_module(module) == compiler


@pytest.mark.parametrize(
    "value, expected",
    [
        (7, ("int", 7)),
        (np.int64(3), ("int", 3)),
        ((128, 2, 1), ("ints", (128, 2, 1))),
        (np.complex64, ("dtype", np.dtype(np.complex64))),
        (np.float64, ("dtype", np.dtype(np.float64))),
        (True, None),
        (None, None),
        ((), None),
        ((1, "a"), None),
        ("Block", None),
        (np.dtype(np.float32), None),  # a dtype instance is not a number class
    ],
)
def test_kernel_constants(value, expected):
    assert _compilers.kernel_constant(value) == expected


def test_no_compiler_installed_is_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setattr(_compilers, "installed", lambda: ())
    with pytest.raises(ImportError, match=r"nvmathx\[device\]"):
        _compilers.default_compiler()


def test_the_recommended_compiler_is_the_default_when_both_are_installed(monkeypatch):
    monkeypatch.setattr(_compilers, "installed", lambda: ("numba-cuda-mlir", "numba-cuda"))
    assert _compilers.default_compiler() == "numba-cuda-mlir"
    monkeypatch.setattr(_compilers, "installed", lambda: ("numba-cuda",))
    assert _compilers.default_compiler() == "numba-cuda"


def test_report_has_a_line_per_compiler():
    lines = _compilers.report()
    assert [line.split()[0] for line in lines] == list(_compilers.COMPILERS)
    for line, compiler in zip(lines, _compilers.COMPILERS):
        assert (_compilers.version(compiler) or "not installed") in line


@needs_mathdx
def test_importing_the_device_api_and_building_descriptors_imports_no_compiler():
    code = (
        "import sys, numpy as np\n"
        "from nvmathx.device_api import FFT, Matmul\n"
        "FFT(64, np.float32, direction='forward', sm=(9, 0)).value_type\n"
        "Matmul((16, 16, 16), np.float32, sm=(9, 0)).value_type\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'numba_cuda_mlir', 'llvmlite')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@needs_mathdx
def test_host_value_types_are_numpy_scalar_types():
    from nvmathx.device_api import FFT, Matmul

    r2c = FFT(64, np.float64, fft_type="r2c", sm=(9, 0))
    assert (r2c.value_type, r2c.input_type, r2c.output_type) == (np.complex128, np.float64, np.complex128)
    assert Matmul((16, 16, 16), np.float32, data_type="complex", sm=(9, 0)).value_type is np.complex64


# Types a descriptor through each compiler's own typeof, in one process, and prints the compiler of each type.
_TYPED_BY = """
import sys, numpy as np
from nvmathx.device_api import FFT
def typed_by(module):
    numba_type = sys.modules[module].typeof_impl(fft, None)
    kinds = [name for name in ("nvmathx.device_api._numba_cuda", "nvmathx.device_api._numba_cuda_mlir")
             if name in sys.modules and isinstance(numba_type, sys.modules[name].FFTType)]
    return ",".join(kinds) or repr(numba_type)
{before}
fft = FFT(64, np.float32, direction="forward", sm=(9, 0))
{after}
by_numba_cuda = typed_by("numba.cuda.typing.typeof")
{later}
print(by_numba_cuda, typed_by("numba_cuda_mlir.numba_cuda.typing.typeof"))
"""


@needs_mathdx
@pytest.mark.parametrize("before, after, later", [
    ("import numba.cuda, numba_cuda_mlir.cuda", "", ""),  # both imported first: both registries know FFT
    ("import numba.cuda", "import numba_cuda_mlir.cuda", ""),  # one registered at construction, one by the fallback
    ("", "import numba.cuda", "import numba_cuda_mlir.cuda"),  # each imported after the descriptor was built
    ("", "import numba_cuda_mlir.cuda, numba.cuda", ""),  # the documented limit: neither typed yet, the default
])
def test_each_compiler_types_descriptors_through_its_own_registry(before, after, later):
    pytest.importorskip("numba.cuda")
    pytest.importorskip("numba_cuda_mlir")
    code = _TYPED_BY.format(before=before, after=after, later=later)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    by_numba_cuda, by_mlir = result.stdout.split()
    assert by_mlir == "nvmathx.device_api._numba_cuda_mlir"
    if before or later:
        assert by_numba_cuda == "nvmathx.device_api._numba_cuda"
    else:  # numba-cuda asked first while both were imported and unregistered: the default compiler's type
        assert by_numba_cuda == f"nvmathx.device_api._{_compilers.default_compiler().replace('-', '_')}"


def test_no_frame_is_inspected_to_choose_a_compiler():
    import inspect

    from nvmathx.device_api import _compilers as device_compilers
    from nvmathx.device_api import _fft, _matmul, _random, _solver

    for module in (device_compilers, _fft, _matmul, _random, _solver):
        source = inspect.getsource(module)
        assert "_getframe" not in source and "currentframe" not in source


def test_the_entry_points_name_the_registration():
    """Both compilers' extension groups name register_imported, which an installed nvmathx runs
    before each compiler's first kernel."""
    import pathlib

    from nvmathx.device_api import _compilers as device_compilers

    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    for group in ("numba_cuda_extensions", "numba_cuda_mlir_extensions"):
        module, _, name = project["entry-points"][group]["init"].partition(":")
        assert module == device_compilers.__name__
        assert getattr(device_compilers, name) is device_compilers.register_imported
