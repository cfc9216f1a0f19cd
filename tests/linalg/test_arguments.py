"""Arguments as numpy takes them: numpy numbers and 0-d arrays wherever Python numbers go, and
lists, tuples and scalars as operands (converted with numpy.asarray), in both forms, on the CPU,
on the GPU code path (host stand-in) and on a GPU."""

import gc

import numpy as np
import pytest

from nvmathx import OperandError, OptionsError, UnsupportedOperandError
from nvmathx.linalg import Matmul, matmul, plan_cache

from ._fake_cublaslt import install, to_device, to_host
from ._reference import random, reference, relative_error, tolerance


@pytest.fixture
def fake(monkeypatch):
    fake_lt, _ = install(monkeypatch)
    yield fake_lt
    plan_cache.clear()
    gc.collect()


def _stateful(*args, reset=None, **kwargs):
    """``Matmul(*args, **kwargs)`` planned and executed (after ``reset_operands(**reset)``)."""
    with Matmul(*args, **kwargs) as mm:
        mm.plan()
        if reset:
            mm.reset_operands(**reset)
        return mm.execute()


REAL_SCALARS = [np.float32(0.5), np.float64(-1.25), np.float16(2), np.int64(3), np.uint8(2), np.array(0.75),
                np.array(-2, np.int32), np.array(1.5, np.float32)]
COMPLEX_SCALARS = [np.complex64(0.5 - 1j), np.complex128(2j), np.array(1 + 1j), np.float32(0.5)]


@pytest.mark.parametrize("alpha", REAL_SCALARS, ids=repr)
@pytest.mark.parametrize("space", ["cpu", "fake-gpu"])
def test_numpy_numbers_for_alpha_and_beta(rng, request, space, alpha):
    if space == "fake-gpu":
        request.getfixturevalue("fake")
    move = to_device if space == "fake-gpu" else (lambda x: x)
    back = to_host if space == "fake-gpu" else np.asarray
    a, b, c = random(rng, (5, 4)), random(rng, (4, 3)), random(rng, (5, 3))
    beta = alpha
    expected = reference(a, b, c, float(alpha), float(beta))
    results = [matmul(move(a), move(b), move(c), alpha=alpha, beta=beta),
               _stateful(move(a), move(b), move(c), alpha=alpha, beta=beta),
               _stateful(move(a), move(b), move(c), reset={"alpha": alpha, "beta": beta})]
    for result in results:
        assert relative_error(back(result), expected) < tolerance("float32")


@pytest.mark.parametrize("alpha", COMPLEX_SCALARS, ids=repr)
def test_numpy_complex_numbers(rng, alpha):
    a, b, c = random(rng, (5, 4), "complex64"), random(rng, (4, 3), "complex64"), random(rng, (5, 3), "complex64")
    expected = reference(a, b, c, complex(alpha), complex(alpha))
    for result in (matmul(a, b, c, alpha=alpha, beta=alpha), _stateful(a, b, c, alpha=alpha, beta=alpha)):
        assert relative_error(result, expected) < tolerance("complex64")


@pytest.mark.parametrize("bad", [np.array([1.0]), np.bool_(True), np.array(True), np.array("2"), np.array(None)],
                         ids=repr)
def test_other_arrays_are_no_scalars(bad):
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    for call in (lambda: matmul(a, b, alpha=bad), lambda: Matmul(a, b, alpha=bad),
                 lambda: Matmul(a, b).reset_operands(alpha=bad)):
        with pytest.raises(OptionsError) as info:
            call()
        assert info.value.argument == "alpha"


def test_a_0d_array_changed_in_place_is_read_again(rng, fake):
    """The function form re-reads alpha and beta only when they change: a 0-d array may change in
    place, so it is read on every call (a cached plan must not keep its old value)."""
    a, b, c = random(rng, (6, 4)), random(rng, (4, 5)), random(rng, (6, 5))
    da, db, dc = to_device(a), to_device(b), to_device(c)
    beta = np.array(0.5)
    for value in (0.5, 2.0, -1.0):
        beta[...] = value
        for result in (matmul(da, db, dc, beta=beta), matmul(a, b, c, beta=beta)):
            assert relative_error(np.asarray(to_host(result) if not isinstance(result, np.ndarray) else result),
                                  reference(a, b, c, 1.0, value)) < tolerance("float32")
    assert plan_cache.info(0).size == 1


def test_numpy_iterations_and_scales(rng, fake):
    a, b = random(rng, (8, 5)), random(rng, (5, 6))
    with Matmul(to_device(a), to_device(b)) as mm:
        mm.plan()
        assert len(mm.autotune(iterations=np.int64(2))) == 3
        with pytest.raises(OptionsError, match="^iterations: "):
            mm.autotune(iterations=np.float64(2))
    e4m3 = random(rng, (16, 32), "float8_e4m3fn"), random(rng, (16, 32), "float8_e4m3fn").T
    exact = reference(*e4m3)
    for scale in (np.float32(0.5), np.float64(0.5), np.array(0.5), np.array([0.5], np.float64)):
        for result in (matmul(*e4m3, quantization_scales={"a": scale}, options={"result_type": "float32"}),
                       matmul(*(to_device(x) for x in e4m3), quantization_scales={"a": scale},
                              options={"result_type": "float32"})):
            assert relative_error(to_host(result) if not isinstance(result, np.ndarray) else result,
                                  0.5 * exact) < tolerance("float8_e4m3fn")
    with pytest.raises(OptionsError) as info:
        matmul(*e4m3, quantization_scales={"b": np.ones(2, np.float32)})
    assert info.value.argument == "quantization_scales['b']"


ARRAY_LIKES = [
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0], [-1.0]]),
    (((1.0, 2.0), (3.0, 4.0)), (0.5, 0.25)),  # tuples; a 1-D b
    ([1.0, 2.0], [[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]]),  # a 1-D a
    ([np.float32(1), np.float32(2)], [np.ones(3, np.float32), np.arange(3, dtype=np.float32)]),  # numpy pieces
    ([[[1j, 2.0]]], [[1.0], [1j]]),  # complex, batched
]


@pytest.mark.parametrize("a, b", ARRAY_LIKES)
def test_array_likes_in_both_forms_as_numpy_takes_them(a, b):
    expected = np.matmul(np.asarray(a), np.asarray(b))
    for result in (matmul(a, b), _stateful(a, b), matmul(a, b, execution="cpu")):
        assert isinstance(result, np.ndarray) and result.dtype == expected.dtype and result.shape == expected.shape
        np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_array_likes_for_c_bias_and_reset(rng):
    a, b = random(rng, (3, 4), "float64"), random(rng, (4, 2), "float64")
    c, bias = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0.5, -0.5]
    expected = reference(a, b, np.asarray(c), 1.0, 2.0) + np.asarray(bias)
    for result in (matmul(a, b, c, beta=2.0, epilog="BIAS", epilog_inputs={"bias": bias}),
                   matmul(a.tolist(), b.tolist(), tuple(c), beta=2.0, epilog="BIAS", epilog_inputs={"bias": bias})):
        np.testing.assert_allclose(result, expected, rtol=1e-12)
    with Matmul(a, b, c, beta=2.0) as mm:
        mm.plan(epilog="BIAS", epilog_inputs={"bias": tuple(bias)})
        mm.reset_operands(a=(2 * a).tolist(), epilog_inputs={"bias": [0.0, 0.0]})
        np.testing.assert_allclose(mm.execute(), reference(2 * a, b, np.asarray(c), 1.0, 2.0), rtol=1e-12)


@pytest.mark.parametrize("space", ["cpu", "fake-gpu"])
def test_array_likes_run_where_numpy_arrays_run(request, space):
    """With ``execution="cuda"``, as numpy arrays: staged to the GPU and the result copied back."""
    execution = None
    if space == "fake-gpu":
        fake_lt = request.getfixturevalue("fake")
        execution = "cuda"
    a, b = [[1.0, 2.0, 3.0]], [[1.0], [2.0], [3.0]]
    for result in (matmul(a, b, execution=execution), _stateful(a, b, execution=execution)):
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(result, [[14.0]])
    if space == "fake-gpu":
        assert fake_lt.launches == 2


@pytest.mark.parametrize("a, b, error, argument", [
    (2.0, [[1.0]], OperandError, "a"),  # a scalar is 0-d, as numpy.matmul says
    ([[1.0]], np.float64(3.0), OperandError, "b"),
    ([[1, 2]], [[1], [2]], UnsupportedOperandError, "a"),  # int64, as np.asarray makes it
    ([[1.0, 2.0], [3.0]], [[1.0]], OperandError, "a"),  # ragged
    ([[1.0]], [["x"]], UnsupportedOperandError, "b"),
    ("ab", [[1.0]], UnsupportedOperandError, "a"),  # strings and dicts are no array-likes
    ([[1.0]], {"b": 1}, UnsupportedOperandError, "b"),
])
def test_bad_array_likes_fail_alike_in_both_forms(a, b, error, argument):
    for call in (lambda: matmul(a, b), lambda: Matmul(a, b)):
        with pytest.raises(error) as info:
            call()
        assert info.value.argument == argument and str(info.value).startswith(f"{argument}: ")


@pytest.mark.gpu
def test_array_likes_and_numpy_numbers_on_a_gpu(rng):
    torch = pytest.importorskip("torch")
    a, b = [[1.0, 2.0, 3.0]], [[1.0], [2.0], [3.0]]
    for result in (matmul(a, b, execution="cuda"), _stateful(a, b, execution="cuda")):
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(result, [[14.0]])
    x = torch.from_numpy(random(rng, (64, 32))).cuda()
    w = torch.from_numpy(random(rng, (32, 16))).cuda()
    c = torch.from_numpy(random(rng, (64, 16))).cuda()
    expected = reference(x.cpu().numpy(), w.cpu().numpy(), c.cpu().numpy(), 0.5, 2.0)
    beta = np.array(2.0)
    for result in (matmul(x, w, c, alpha=np.float32(0.5), beta=beta),
                   _stateful(x, w, c, alpha=np.float16(0.5), beta=np.int64(2))):
        assert relative_error(result.cpu().numpy(), expected) < tolerance("float32")
    beta[...] = -1.0
    assert relative_error(matmul(x, w, c, alpha=np.float32(0.5), beta=beta).cpu().numpy(),
                          reference(x.cpu().numpy(), w.cpu().numpy(), c.cpu().numpy(), 0.5, -1.0)) < 1e-5
    with pytest.raises(OperandError) as info:
        matmul(x, [[1.0] * 16] * 32)  # a host array-like beside a GPU operand
    assert info.value.argument == "b"
