"""numpy.matmul batch broadcasting: the pure plan of cuBLASLt calls (offsets checked against numpy's
own indexing), the traits built on it, and the CPU execution space against numpy.matmul."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvmathx import OperandError
from nvmathx._matmulcore.epilogs import epilog_spec
from nvmathx.linalg import matmul
from nvmathx.linalg._batching import LAUNCH_BYTES, BatchOperand, dense_batch_strides, plan_batches
from nvmathx.linalg._options import MatmulOptions
from nvmathx.linalg._problem import OperandInfo, describe_problem
from nvmathx.linalg._traits import EXPANDABLE_DTYPES, lt_traits

from ._broadcast_cases import cases, expected_result, make_operand, make_operands, rounding_error, run_product
from ._reference import relative_error


def _settings(max_examples=100):
    """Hypothesis settings for tests that also take the (per-test) ``seed`` fixture."""
    return settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None,
                    max_examples=max_examples)


def _elements(x):
    return tuple(s // x.itemsize for s in x.strides)


def _address(x):
    return x.__array_interface__["data"][0]


# -- the plan of calls ---------------------------------------------------------------------------


def _operands_of(a, b, c, inputs, batch):
    """(arrays by name, BatchOperand by name) of a problem; matrices count their own elements."""
    arrays = {"a": a if a.ndim > 1 else a[np.newaxis], "b": b if b.ndim > 1 else b[:, np.newaxis]}
    if c is not None:  # with the axes numpy's 1-D promotion removed put back
        c = c[..., np.newaxis] if b.ndim == 1 else c
        arrays["c"] = c[..., np.newaxis, :] if a.ndim == 1 else c
    d = np.empty(tuple(batch) + (arrays["a"].shape[-2], arrays["b"].shape[-1]))
    arrays["d"] = d
    if inputs is not None:
        bias = inputs["bias"]
        arrays["bias"] = bias if bias.ndim > 1 else bias[np.newaxis]
    return arrays


def _check_offsets_follow_numpy(plan, arrays, operands, batch):
    """Every matrix of the result is computed exactly once, from the matrices numpy would pair."""
    index = {name: plan.names.index(name) for name in arrays}
    d = arrays["d"]
    matrix_d = d.shape[-2] * d.shape[-1]
    seen = []
    for call in plan.offsets:
        for i in range(plan.batch_count):
            where_d = call[index["d"]] + i * plan.strides["d"]
            assert where_d % matrix_d == 0
            idx = np.unravel_index(where_d // matrix_d, batch) if batch else ()
            seen.append(tuple(int(j) for j in idx))
            for name, x in arrays.items():
                where = call[index[name]] + i * plan.strides[name]
                own = x.shape[:-2]
                own_idx = tuple(j if e > 1 else 0 for j, e in zip(idx[len(batch) - len(own):], own))
                if name in plan.expand:
                    expected = int(np.ravel_multi_index(idx, batch)) * operands[name].matrix_elements if batch else 0
                else:
                    expected = (_address(x[own_idx]) - _address(x)) // x.itemsize
                assert where == expected, (name, idx, call, i)
    assert sorted(seen) == sorted(np.ndindex(*batch)) if batch else seen == [()]


@_settings()
@given(case=cases(), launch_bytes=st.sampled_from([0, 1, LAUNCH_BYTES, 1 << 50]), expandable=st.booleans(),
       draw=st.integers(0, 2**32 - 1))
def test_plan_offsets_reproduce_numpy_indexing(seed, case, launch_bytes, expandable, draw):
    rng = np.random.default_rng([seed, draw])
    a, b, c, inputs = make_operands(rng, case)
    batch = case.batch
    arrays = _operands_of(a, b, c, inputs, batch)
    operands = {name: BatchOperand(x.shape[:-2], _elements(x)[:-2], x.shape[-2] * x.shape[-1], x.itemsize,
                                   expandable and name != "d")
                for name, x in arrays.items()}
    plan = plan_batches(batch, operands, launch_bytes=launch_bytes)
    assert plan.batch_count * plan.calls == int(np.prod(batch, dtype=np.int64))
    assert all(plan.strides[name] >= 0 for name in plan.names)
    assert not set(plan.expand) - {name for name, op in operands.items() if op.expandable}
    _check_offsets_follow_numpy(plan, arrays, operands, batch)


def _op(shape, strides, elements=12, expandable=True):
    return BatchOperand(tuple(shape), tuple(strides), elements, 4, expandable)


def test_regular_batches_take_one_call():
    d = _op((2, 3, 4), dense_batch_strides((2, 3, 4), 12), expandable=False)
    plan = plan_batches((2, 3, 4), {"a": _op((2, 3, 4), (120, 40, 10)), "b": _op((), ()), "d": d})
    assert plan.single and plan.batch_count == 24 and plan.strides == {"a": 10, "b": 0, "d": 12}
    plan = plan_batches((1, 1), {"a": _op((1, 1), (7, 7)), "d": _op((1, 1), (12, 12))})
    assert plan.single and plan.batch_count == 1 and plan.offsets == ((0, 0),)


def test_partly_broadcast_batch_loops_over_one_axis():
    # (2, 1, M, K) @ (3, K, N): a varies along axis 0 only, b along axis 1 only
    operands = {"a": _op((2, 1), (12, 12)), "b": _op((3,), (12,)), "d": _op((2, 3), (36, 12), expandable=False)}
    plan = plan_batches((2, 3), operands)
    assert not plan.expand and plan.calls == 2 and plan.batch_count == 3
    assert plan.strides == {"a": 0, "b": 12, "d": 12} and plan.offsets == ((0, 0, 0), (12, 0, 36))


def test_many_small_calls_expand_instead():
    # (100, 1, 2, 2) @ (100, 2, 2): 100 launches cost more than copying both inputs to the full batch
    batch = (100, 100)
    operands = {"a": _op((100, 1), (4, 4), 4), "b": _op((100,), (4,), 4),
                "d": _op(batch, dense_batch_strides(batch, 4), 4, expandable=False)}
    plan = plan_batches(batch, operands)
    assert plan.expand == ("a", "b") and plan.single is False and plan.calls == 1 and plan.batch_count == 10_000
    assert plan.strides == {"a": 4, "b": 4, "d": 4}
    fixed = {name: op._replace(expandable=False) for name, op in operands.items()}
    assert plan_batches(batch, fixed).calls == 100
    assert plan_batches(batch, operands, max_expanded_bytes=100 * 100 * 16 - 1).calls == 100


def test_large_matrices_never_expand():
    batch = (2, 3)
    big = 1 << 24
    operands = {"a": _op((2, 1), (big, 0), big), "b": _op((3,), (big,), big),
                "d": _op(batch, (3 * big, big), big, False)}
    assert plan_batches(batch, operands).expand == ()


def test_a_negative_stride_is_never_the_cublaslt_batch():
    plan = plan_batches((4,), {"a": _op((4,), (-12,)), "d": _op((4,), (12,), expandable=False)}, launch_bytes=0)
    assert plan.batch_count == 1 and [call[0] for call in plan.offsets] == [0, -12, -24, -36]


def test_expandable_dtypes_are_those_the_device_copy_keeps():
    from nvmathx._codegen.elementwise import can_copy

    assert all(can_copy(dtype, dtype) for dtype in EXPANDABLE_DTYPES)
    assert not any(can_copy(dtype, dtype) for dtype in ("float16", "bfloat16", "uint8"))


# -- traits --------------------------------------------------------------------------------------


def _info(x):
    return OperandInfo(x.shape, _elements(x), x.dtype.name)


def test_traits_of_a_partly_broadcast_product(rng):
    a, b = make_operand(rng, (2, 1), 4, 5, "C", "float32"), make_operand(rng, (3,), 5, 6, "T", "float32")
    c = make_operand(rng, (3,), 4, 6, "C", "float32")
    problem = describe_problem(_info(a), _info(b), _info(c), beta=1, epilog=None, epilog_inputs={},
                               options=MatmulOptions())
    traits = lt_traits(problem, _info(a), _info(b), _info(c), {}, {"a": 256, "b": 256, "c": 256})
    batches = traits.batches
    assert traits.batch_count == batches.batch_count == 3 and batches.calls == 2 and not traits.expansions
    assert traits.lt_b.batch_stride == 0 and traits.lt_a.batch_stride == 30 and traits.lt_c.batch_stride == 24
    assert traits.lt_d.batch_stride == 24


def test_traits_of_expanded_inputs(rng):
    a = make_operand(rng, (64, 1), 2, 2, "T", "float32")
    b = make_operand(rng, (64,), 2, 2, "C", "float32")
    bias = make_operand(rng, (64, 1), 1, 2, "C", "float32")
    problem = describe_problem(_info(a), _info(b), None, beta=0, epilog=epilog_spec("BIAS"),
                               epilog_inputs={"bias": _info(bias)}, options=MatmulOptions())
    traits = lt_traits(problem, _info(a), _info(b), None, {"bias": _info(bias)}, {"a": 8, "b": 256, "bias": 256})
    assert traits.batches.single is False and traits.batches.calls == 1 and traits.batch_count == 64 * 64
    expanded = {name: target for name, _, target in traits.expansions}
    assert set(expanded) == {"a", "b", "bias"}
    assert expanded["a"].shape == (64, 64, 2, 2) and expanded["a"].strides == (256, 4, 1, 2)  # still column-major
    assert traits.lt_b.batch_stride == 4 and traits.bias_batch_stride == 2
    assert traits.alignment_b == 16  # the copy's 16-byte batch stride, not the caller's pointer 8
    half = lt_traits(problem, _info(a), _info(b), None, {"bias": _info(bias)}, {}, expandable_dtypes=())
    assert not half.expansions and half.batches.calls == 64


def test_bias_c_and_aux_batches_must_broadcast():
    a, b = OperandInfo((2, 3, 4, 5), (60, 20, 5, 1), "float32"), OperandInfo((5, 6), (6, 1), "float32")
    options = MatmulOptions()
    for c_shape in [(4, 6), (3, 4, 6), (1, 3, 4, 6), (2, 1, 4, 6)]:
        describe_problem(a, b, OperandInfo(c_shape, (0,) * len(c_shape), "float32"), beta=1, epilog=None,
                         epilog_inputs={}, options=options)
    for c_shape in [(2, 4, 6), (3, 2, 3, 4, 6), (4, 1), (6,)]:
        with pytest.raises(OperandError) as info:
            describe_problem(a, b, OperandInfo(c_shape, (0,) * len(c_shape), "float32"), beta=1, epilog=None,
                             epilog_inputs={}, options=options)
        assert info.value.argument == "c"
    for bias_shape, mode in [((6,), "fused"), ((3, 1, 6), "fused"), ((2, 1, 1, 6), "fused"), ((1, 4, 6), "fold")]:
        bias = OperandInfo(bias_shape, (0,) * len(bias_shape), "float32")
        problem = describe_problem(a, b, None, beta=0, epilog=epilog_spec("BIAS"), epilog_inputs={"bias": bias},
                                   options=options)
        assert problem.bias_mode == mode
    with pytest.raises(OperandError) as info:
        describe_problem(a, b, None, beta=0, epilog=epilog_spec("BIAS"),
                         epilog_inputs={"bias": OperandInfo((2, 1, 6), (6, 6, 1), "float32")}, options=options)
    assert info.value.argument == "epilog_inputs['bias']"


# -- the CPU execution space against numpy.matmul ------------------------------------------------


@_settings(max_examples=150)
@given(case=cases(), draw=st.integers(0, 2**32 - 1), stateful=st.booleans())
def test_cpu_matches_numpy_matmul(seed, case, draw, stateful):
    rng = np.random.default_rng([seed, draw])
    a, b, c, inputs = make_operands(rng, case)
    alpha, beta = 0.5, (-2.0 if c is not None else 0)
    expected = expected_result(a, b, c, alpha, beta, case.epilog, inputs)
    result = run_product(a, b, c, alpha, beta, case.epilog, inputs, stateful)
    assert isinstance(result, np.ndarray) and result.shape == np.matmul(a, b).shape == expected.shape
    assert rounding_error(result, expected, a, b, c, alpha, beta, inputs) < 1e-12


def test_the_issue_example_on_cpu(rng):
    a, b = make_operand(rng, (2, 1), 4, 5, "C"), make_operand(rng, (3,), 5, 6, "C")
    result = matmul(a, b)
    assert result.shape == (2, 3, 4, 6)
    assert relative_error(result, np.matmul(a, b)) < 1e-12

