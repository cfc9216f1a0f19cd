"""The on-disk code cache: location, round trip, corruption, concurrent writers, clearing."""

import os
import threading

import pytest

from nvmathx._codegen import cache as _cache
from nvmathx.device_api import cache_dir, cache_info, clear_cache, set_cache_dir

KEY = {"library": "cufftdx", "operators": [["SIZE", 64]], "target": "sm_90a", "libmathdx": "0.4.2"}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "_override", None)  # restored afterwards
    set_cache_dir(tmp_path)
    return tmp_path / "device"


def _entry(size=5000):
    return _cache.CodeEntry("nvmathx_test_symbol", os.urandom(size))


def test_location_precedence(monkeypatch, tmp_path):
    monkeypatch.setattr(_cache, "_override", None)  # the session fixture's folder
    monkeypatch.delenv("NVMATHX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == str(tmp_path / "xdg" / "nvmathx" / "device")
    monkeypatch.setenv("NVMATHX_CACHE_DIR", str(tmp_path / "env"))
    assert cache_dir() == str(tmp_path / "env" / "device")
    set_cache_dir(tmp_path / "explicit")
    assert cache_dir() == str(tmp_path / "explicit" / "device")
    set_cache_dir(None)
    monkeypatch.delenv("NVMATHX_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "nvmathx", "device")


def test_round_trip_and_counters(folder):
    before = cache_info()
    assert _cache.load(KEY) is None
    entry = _entry()
    path = _cache.store(KEY, entry)
    assert path is not None and os.path.dirname(path) == str(folder)
    assert _cache.load(KEY) == entry
    other = dict(KEY, target="sm_80")
    assert _cache.load(other) is None
    info = cache_info()
    assert info.directory == str(folder)
    assert info.entries == 1 and info.size_bytes > len(entry.code)
    assert info.hits - before.hits == 1 and info.misses - before.misses == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "header"])
def test_damaged_entry_is_a_miss_and_is_rewritten(folder, damage):
    entry = _entry()
    path = _cache.store(KEY, entry)
    blob = bytearray(open(path, "rb").read())
    if damage == "flip":
        blob[-100] ^= 0xFF
    elif damage == "truncate":
        del blob[-10:]
    else:
        blob[:8] = b"garbage!"
    open(path, "wb").write(bytes(blob))
    corrupted = cache_info().corrupted
    assert _cache.load(KEY) is None
    assert cache_info().corrupted == corrupted + 1
    _cache.store(KEY, entry)
    assert _cache.load(KEY) == entry


def test_entry_of_another_key_under_the_same_name_is_refused(folder):
    path = _cache.store(KEY, _entry())
    os.replace(path, os.path.join(folder, _cache.entry_name(dict(KEY, target="sm_100a"))))
    assert _cache.load(dict(KEY, target="sm_100a")) is None


def test_concurrent_writers_leave_one_whole_entry(folder):
    entries = [_entry(200_000) for _ in range(8)]
    threads = [threading.Thread(target=_cache.store, args=(KEY, e)) for e in entries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _cache.load(KEY) in entries
    assert sorted(os.listdir(folder)) == [_cache.entry_name(KEY)]


def test_clear_cache_removes_entries(folder):
    _cache.store(KEY, _entry())
    _cache.store(dict(KEY, target="sm_80"), _entry())
    assert clear_cache() == 2
    assert cache_info().entries == 0
    assert _cache.load(KEY) is None


def test_unwritable_folder_is_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "_override", None)  # restored afterwards
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    set_cache_dir(blocker)
    assert _cache.store(KEY, _entry()) is None


def test_linked_images_are_a_second_kind_of_entry(folder):
    image = _cache.LinkedImage(os.urandom(3000), "info log")
    before = cache_info()
    assert _cache.load_linked(KEY) is None
    _cache.store_linked(KEY, image)
    assert _cache.load(KEY) is None  # same key, other kind: no code entry
    assert _cache.load_linked(KEY) == image
    _cache.store(KEY, _entry())
    info = cache_info()
    assert info.entries == 2
    assert (info.link_hits - before.link_hits, info.link_misses - before.link_misses) == (1, 1)
    code_path = os.path.join(folder, _cache.entry_name(KEY))
    os.replace(code_path, os.path.join(folder, _cache.entry_name(KEY, "linked")))
    assert _cache.load_linked(KEY) is None  # a code entry under a linked image's name is refused
    assert cache_info().link_corrupted == info.link_corrupted + 1
    assert clear_cache() == 1 and cache_info().entries == 0


def test_linked_images_keep_their_symbols(folder):
    symbols = {"scale<float>": "_Z5scaleIfEvPv", "add_rows": "_Z8add_rowsPKf"}
    image = _cache.LinkedImage(os.urandom(2000), "", symbols)
    _cache.store_linked(KEY, image)
    assert _cache.load_linked(KEY) == image
    plain = {**KEY, "plain": True}
    _cache.store_linked(plain, _cache.LinkedImage(b"cubin", "log"))  # as nvJitLink's images are stored
    assert _cache.load_linked(plain).symbols == {}
