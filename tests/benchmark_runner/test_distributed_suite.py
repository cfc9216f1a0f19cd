"""The distributed suite's declarations on the CPU, at the world sizes a multi-GPU run uses."""

import pytest

from benchmarks import Context
from benchmarks.suites import distributed


@pytest.mark.parametrize("world_size, grid", [(1, None), (2, None), (3, None), (4, (2, 2)), (6, (2, 3)),
                                              (8, (2, 4)), (9, (3, 3)), (16, (4, 4))])
def test_process_grid_is_the_squarest_two_dimensional_one(world_size, grid):
    assert distributed.process_grid(world_size) == grid


@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_cases_per_world_size(world_size):
    ctx = Context(world_size=world_size)
    cases = {case.name: case for case in distributed.cases(ctx)}
    expected = {"dist_fftn_512cubed_c64", "dist_fftn_c64", "dist_matmul_16384_bf16"}
    if world_size >= 4:
        expected.add("dist_matmul_bf16_grid2d")
    assert set(cases) == expected
    assert distributed.result_name(ctx) == f"distributed_ws{world_size}"
    for case in cases.values():
        assert case.params["world_size"] == world_size
        assert case.params["engine"] in ("nccl", "cublasmp")
    assert cases["dist_fftn_c64"].params["global_shape"] == [256 * world_size, 2048, 2048]
    assert cases["dist_matmul_16384_bf16"].params["m"] == 16384 * world_size
    if world_size >= 4:
        grid = cases["dist_matmul_bf16_grid2d"].params
        rows, columns = grid["process_grid"]
        assert rows * columns == world_size
        # every rank computes one 16384^2 block with K = 16384: TFLOP/s per rank at 1 ms
        assert cases["dist_matmul_bf16_grid2d"].derive(1.0) == pytest.approx(2 * 16384 ** 3 / 1e9)
