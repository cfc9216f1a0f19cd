"""Choosing what runs: peers, cases, and the order of library columns."""

import pytest

from benchmarks import Case
from benchmarks._context import Context, installed_peers, select_peers
from benchmarks._runner import available_suites, libraries_to_run, load_suite, select_cases


def _case(name, gpu=True, libraries=("nvmathx",)):
    return Case(name=name, unit="ms", setups={library: (lambda: (lambda: None)) for library in libraries}, gpu=gpu)


def test_select_peers_defaults_to_installed():
    assert select_peers([], ("torch", "cuda.core")) == ("torch", "cuda.core")


def test_select_peers_accepts_commas_and_repeats_in_canonical_order():
    installed = ("torch", "cupy", "nvmath-python", "cuda.core")
    assert select_peers(["cupy,torch", "cuda.core"], installed) == ("torch", "cupy", "cuda.core")


def test_select_peers_drops_requested_but_missing():
    assert select_peers(["cupy,torch"], ("torch",)) == ("torch",)


def test_select_peers_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown peer.*jax"):
        select_peers(["torch,jax"], ("torch",))


def test_installed_peers_are_known_and_include_cuda_core():
    peers = installed_peers()
    assert "cuda.core" in peers  # a dependency of nvmathx
    assert set(peers) <= {"torch", "cupy", "nvmath-python", "cuda.core"}


def test_select_cases_by_glob():
    cases = [_case("matmul_fp16_small"), _case("matmul_fp32_small"), _case("fft_c2c")]
    chosen, no_gpu = select_cases(cases, ["matmul_*16*", "fft_*"], has_gpu=True)
    assert [case.name for case in chosen] == ["matmul_fp16_small", "fft_c2c"]
    assert no_gpu == []


def test_select_cases_without_gpu_keeps_cpu_cases():
    cases = [_case("gpu_case"), _case("cpu_case", gpu=False)]
    chosen, no_gpu = select_cases(cases, [], has_gpu=False)
    assert [case.name for case in chosen] == ["cpu_case"]
    assert no_gpu == ["gpu_case"]


def test_select_cases_rejects_duplicate_names():
    with pytest.raises(ValueError, match="duplicate case names: twice"):
        select_cases([_case("twice"), _case("once"), _case("twice")], [], has_gpu=True)


def test_libraries_order_nvmathx_then_selected_peers_then_extra_columns():
    case = _case("x", libraries=("python", "cupy", "torch", "cuda.core", "nvmathx", "nvmath-python"))
    assert libraries_to_run(case, ("torch", "cuda.core", "nvmath-python")) == [
        "nvmathx", "torch", "nvmath-python", "cuda.core", "python",
    ]


def test_suites_are_discovered_and_unknown_names_rejected():
    assert "smoke" in available_suites()
    with pytest.raises(ValueError, match="unknown suite 'nope'"):
        load_suite("nope")


def test_context_rotations_exceed_twice_l2():
    ctx = Context(l2_bytes=50 << 20)
    count = ctx.rotations(32 << 20)
    assert count * (32 << 20) >= 2 * (50 << 20) > (count - 1) * (32 << 20)
    assert ctx.rotations(1 << 30) == 1
    assert ctx.rotations(1, limit=16) == 16
    with pytest.raises(ValueError, match="nbytes"):
        ctx.rotations(0)


def test_context_rng_is_seeded():
    first, second = Context(seed=7).rng.standard_normal(4), Context(seed=7).rng.standard_normal(4)
    assert (first == second).all()
