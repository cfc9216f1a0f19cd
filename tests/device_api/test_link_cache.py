"""The on-disk cache of linked kernel images: what its key covers, hits and misses, corruption,
the opt-out, kernels without nvmathx code, and reuse by a fresh process (linking, and launching).

In-process tests replace the link itself (nvJitLink) by a stand-in that returns bytes derived from
the linker's inputs, so they run on machines without nvJitLink or a GPU.
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.compilers import load  # noqa: E402

if isinstance(load("numba-cuda"), str):  # the link cache serves numba-cuda's linker
    pytest.skip(load("numba-cuda"), allow_module_level=True)

from numba.cuda.cudadrv import driver  # noqa: E402
from numba.cuda.cudadrv.linkable_code import LTOIR  # noqa: E402

from helpers.requirements import mathdx_missing  # noqa: E402
from nvmathx._codegen import cache as _cache  # noqa: E402
from nvmathx._codegen import link  # noqa: E402
from nvmathx.device_api import _link_cache, cache_dir, cache_info, set_cache_dir  # noqa: E402

from . import _kernels, _link_probe  # noqa: E402

SM90A = (9, 0, "a")
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_link_probe.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _library(pyfunc):
    try:
        return _link_probe.compile_library(pyfunc)
    except Exception as error:  # NVVM missing is "not available", anything else is a failure
        if "NVVM" in str(error) or "libnvvm" in str(error):
            pytest.skip(f"libNVVM not available: {error}")
        raise


@pytest.fixture(scope="module")
def fft():
    if mathdx_missing():
        pytest.skip(mathdx_missing())
    fft = _link_probe.small_fft(_link_probe.H100)
    fft.code("registers")  # generated into the session's code cache, before tests switch folders
    return fft


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty cache folder for linked images (the descriptors already hold their code)."""
    monkeypatch.setattr(_cache, "_override", None)  # restored afterwards
    monkeypatch.delenv(link.ENVIRONMENT_VARIABLE, raising=False)
    set_cache_dir(tmp_path)
    if link.linker_identity() is None:
        pytest.skip("cuda.core cannot tell which linker it uses")
    return tmp_path / "device"


@pytest.fixture
def links(monkeypatch):
    """Replace the link by a stand-in: a 'cubin' that is a digest of the inputs; counts calls."""
    calls = []
    complete = _link_probe.stand_in_complete(calls)
    monkeypatch.setattr(driver._Linker, "complete", complete)
    return calls


def _key(library, cc=SM90A):
    linker = driver._Linker(max_registers=library._max_registers, cc=cc, lto=library._lto)
    _link_cache._add_inputs(library, linker, cc)
    return _link_cache.link_key(linker)


def test_key_covers_the_kernel_code_and_the_linked_code(folder, fft):
    library = _library(_kernels.block_c2c(fft))
    key = _key(library)
    assert _key(library) == key
    (kind, _, digest), *linked = key["objects"]
    # the kernel goes in as LTO-IR, so nvJitLink inlines the generated functions into it
    assert kind == "ltoir" and digest == hashlib.sha256(bytes(library.get_ltoir(SM90A))).hexdigest()
    assert [name for _, name, _ in linked] == [f"{fft.code('registers').symbol}.ltoir"]
    assert linked[0][2] == hashlib.sha256(fft.code("registers").code).hexdigest()
    changed = _key(_library(_kernels.block_c2c(fft, scale=2)))
    assert changed["objects"][1:] == linked and changed["objects"][0] != key["objects"][0]


def test_key_changes_when_a_linked_file_changes(folder, fft):
    library = _library(_kernels.block_c2c(fft))
    before = _key(library)
    (original,) = library._linking_files
    altered = LTOIR(bytes(original.data[:-1]) + bytes([original.data[-1] ^ 1]), name=original.name)
    _link_cache.mark_nvmathx_code(altered)
    library._linking_files = {altered}
    after = _key(library)
    assert after != before and after["objects"][0] == before["objects"][0]


def test_key_changes_with_the_architecture_and_the_linker(folder, fft, monkeypatch):
    library = _library(_kernels.block_c2c(fft))
    base = _key(library)
    other_arch = _key(library, (10, 0, "a"))
    assert other_arch["arch"] == "sm_100a" and other_arch != base
    identity = dict(link.linker_identity(), nvjitlink=[99, 0])
    monkeypatch.setattr(link, "linker_identity", lambda: identity)
    assert _key(library) != base
    monkeypatch.setattr(link, "linker_identity", lambda: None)
    assert _key(library) is None


def _forget_cubins(library):
    """What a fresh process has of the library: its code, but no linked image in memory."""
    library._cubin_cache.clear()
    library._linkerinfo_cache.clear()
    return library


def test_the_linked_image_is_read_back_instead_of_linking(folder, fft, links):
    library = _library(_kernels.block_c2c(fft))
    first = library.get_cubin(SM90A)
    assert len(links) == 1 and cache_info().link_misses >= 1
    hits = cache_info().link_hits
    second = _forget_cubins(library).get_cubin(SM90A)
    assert len(links) == 1, "the link ran again"
    assert bytes(second.code) == bytes(first.code)
    assert cache_info().link_hits == hits + 1
    assert library.get_linkerinfo(SM90A) == "stand-in log"
    assert len(glob.glob(str(folder / "*.cubin-entry"))) == 1


def test_a_changed_kernel_is_linked_again(folder, fft, links):
    first = _library(_kernels.block_c2c(fft)).get_cubin(SM90A)
    second = _library(_kernels.block_c2c(fft, scale=2)).get_cubin(SM90A)
    assert len(links) == 2 and bytes(second.code) != bytes(first.code)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_linked_image_is_linked_again_and_rewritten(folder, fft, links, damage):
    library = _library(_kernels.block_c2c(fft))
    library.get_cubin(SM90A)
    (path,) = glob.glob(str(folder / "*.cubin-entry"))
    blob = bytearray(open(path, "rb").read())
    if damage == "flip":
        blob[-20] ^= 0xFF
    else:
        del blob[-5:]
    open(path, "wb").write(bytes(blob))
    corrupted = cache_info().link_corrupted
    relinked = _forget_cubins(library).get_cubin(SM90A)
    assert len(links) == 2 and cache_info().link_corrupted == corrupted + 1
    assert bytes(_forget_cubins(library).get_cubin(SM90A).code) == bytes(relinked.code)
    assert len(links) == 2


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_the_environment_variable_turns_the_cache_off(folder, fft, links, monkeypatch, value):
    monkeypatch.setenv(link.ENVIRONMENT_VARIABLE, value)
    library = _library(_kernels.block_c2c(fft))
    library.get_cubin(SM90A)
    _forget_cubins(library).get_cubin(SM90A)
    assert len(links) == 2
    assert not glob.glob(str(folder / "*.cubin-entry"))


def test_kernels_without_nvmathx_code_are_linked_by_numba_unchanged(folder, links):
    def copy(x, y):
        y[0, 0] = x[0, 0]

    before = cache_info()
    library = _library(copy)
    library.get_cubin(SM90A)
    _forget_cubins(library).get_cubin(SM90A)
    after = cache_info()
    assert len(links) == 2
    assert (after.link_hits, after.link_misses, after.entries) == (before.link_hits, before.link_misses, 0)


def _fresh_cache_root(tmp_path):
    """A cache folder holding the session's generated code but no linked images."""
    root = tmp_path / "fresh"
    (root / "device").mkdir(parents=True)
    for path in glob.glob(os.path.join(cache_dir(), "*.ltoir-entry")):
        shutil.copy(path, root / "device")
    return root


def _probe(root, mode, *arguments):
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, NVMATHX_CACHE_DIR=str(root), PYTHONPATH=path)
    env.pop(link.ENVIRONMENT_VARIABLE, None)
    result = subprocess.run(
        [sys.executable, PROBE, mode, *arguments], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _nvjitlink_available() -> bool:
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
        return True
    except Exception:
        return False


def test_a_fresh_process_gets_the_same_cubin_without_linking(tmp_path, fft):
    if not _nvjitlink_available():
        pytest.skip("nvJitLink is not available")
    root = _fresh_cache_root(tmp_path)
    first, second = _probe(root, "cpu"), _probe(root, "cpu")
    assert (first["links"], first["link_misses"], first["link_hits"]) == (1, 1, 0)
    assert (second["links"], second["link_misses"], second["link_hits"]) == (0, 0, 1)
    assert second["sha256"] == first["sha256"]
    changed = _probe(root, "cpu", "scaled")  # one change in the kernel's source
    assert (changed["links"], changed["link_misses"], changed["link_hits"]) == (1, 1, 0)
    assert changed["sha256"] != first["sha256"]


@pytest.mark.gpu
def test_a_fresh_process_launches_the_cached_image_correctly(tmp_path, fft, seed):
    root = _fresh_cache_root(tmp_path)
    first, second = _probe(root, "gpu", str(seed)), _probe(root, "gpu", str(seed))
    assert first["error"] < 1e-5 and second["error"] < 1e-5, (first, second)
    assert first["links"] == 1 and first["link_misses"] == 1
    assert second["links"] == 0 and second["link_hits"] == 1 and second["link_misses"] == 0
