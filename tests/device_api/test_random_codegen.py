"""cuRANDDx code through the compiler-neutral layer (``nvmathx._codegen.random``): what a spec
accepts and refuses before libmathdx compiles anything, and the generated functions, linked by
nvJitLink with a CUDA C++ caller that uses their C signatures (no GPU needed)."""

import numpy as np
import pytest

from helpers.link_probe import link_calls
from helpers.requirements import needs_mathdx
from nvmathx import OptionsError
from nvmathx._codegen import random as random_codegen
from nvmathx._codegen.target import Target

H100 = Target(9, 0)

# (label, keyword arguments of random_spec, argument named, message fragment)
BAD_SPECS = [
    ("unknown generator", dict(generator="mt19937", distribution="uniform"), "generator", "'xorwow'"),
    ("generator not a string", dict(generator=3, distribution="uniform"), "generator", "got 3"),
    ("unknown distribution", dict(generator="xorwow", distribution="gamma"), "distribution", "'poisson'"),
    ("philox has no poisson", dict(generator="philox4_32_10", distribution="poisson"), "distribution",
     "philox4_32_10 has no poisson"),
    ("float bits", dict(generator="xorwow", distribution="uniform_bits", dtype=np.float32), "dtype", "uint32"),
    ("64-bit bits of xorwow", dict(generator="xorwow", distribution="uniform_bits", dtype=np.uint64), "dtype",
     "uint32"),
    ("normal method of uniform", dict(generator="xorwow", distribution="uniform", normal_method="icdf"),
     "normal_method", "normal and log_normal only"),
    ("unknown normal method", dict(generator="xorwow", distribution="normal", normal_method="ziggurat"),
     "normal_method", "'box_muller'"),
    ("box-muller sobol", dict(generator="sobol32", distribution="normal", normal_method="box_muller"),
     "normal_method", "'icdf' only"),
    ("icdf pair", dict(generator="xorwow", distribution="normal", normal_method="icdf", method="pair"), "method",
     "'single'"),
    ("philox f32 pair", dict(generator="philox4_32_10", distribution="uniform", method="pair"), "method", "'quad'"),
    ("integer uniform", dict(generator="xorwow", distribution="uniform", dtype=np.int32), "dtype", "float32"),
    ("not a dtype", dict(generator="xorwow", distribution="uniform", dtype="gaussian"), "dtype", "numpy dtype"),
    ("philox single", dict(generator="philox4_32_10", distribution="normal", method="single"), "method",
     "'quad'"),
    ("xorwow quad", dict(generator="xorwow", distribution="uniform", method="quad"), "method", "'single'"),
    ("unknown method", dict(generator="xorwow", distribution="uniform", method="eight"), "method", "'pair'"),
    ("normal with one parameter", dict(generator="xorwow", distribution="normal", parameters=(1.0,)),
     "parameters", "takes 2 parameters"),
    ("bits with parameters", dict(generator="xorwow", distribution="uniform_bits", parameters=(1.0,)),
     "parameters", "takes 0 parameters"),
    ("parameters not numbers", dict(generator="xorwow", distribution="uniform", parameters=("a", "b")),
     "parameters", "expected 2 numbers"),
    ("empty uniform interval", dict(generator="xorwow", distribution="uniform", parameters=(1.0, 1.0)),
     "parameters", "below the maximum"),
    ("zero standard deviation", dict(generator="mrg32k3a", distribution="log_normal", parameters=(0.0, 0.0)),
     "parameters", "positive"),
    ("infinite mean", dict(generator="mrg32k3a", distribution="normal", parameters=(np.inf, 1.0)),
     "parameters", "finite"),
    ("negative lambda", dict(generator="xorwow", distribution="poisson", parameters=(-2.0,)), "parameters",
     "lambda"),
    ("zero rounds", dict(generator="philox4_32_10", distribution="uniform", philox_rounds=0), "philox_rounds",
     "positive integer"),
    ("rounds for xorwow", dict(generator="xorwow", distribution="uniform", philox_rounds=7), "philox_rounds",
     "philox4_32_10 only"),
]


@pytest.mark.parametrize("label, kwargs, argument, fragment", BAD_SPECS, ids=[row[0] for row in BAD_SPECS])
def test_bad_specs_raise_options_error_naming_the_argument(label, kwargs, argument, fragment):
    with pytest.raises(OptionsError) as raised:
        random_codegen.random_spec(**kwargs)
    assert raised.value.argument == argument
    assert fragment in str(raised.value)


def test_defaults_follow_the_generator():
    philox = random_codegen.random_spec("philox4_32_10", "normal")
    assert (philox.dtype, philox.method, philox.values_per_call, philox.parameters) == ("float32", "quad", 4,
                                                                                         (0.0, 1.0))
    normal = random_codegen.random_spec("xorwow", "normal")
    assert (normal.normal_method, normal.method) == ("box_muller", "pair")
    assert random_codegen.random_spec("mrg32k3a", "log_normal", normal_method="icdf").method == "single"
    assert random_codegen.random_spec("philox4_32_10", "uniform", np.float64, method="pair").values_per_call == 2
    assert random_codegen.random_spec("sobol32", "normal").normal_method == "icdf"
    bits = random_codegen.random_spec("sobol64", "uniform_bits")
    assert (bits.dtype, bits.method, bits.quasi_random) == ("uint64", "single", True)
    poisson = random_codegen.random_spec("mrg32k3a", "poisson", parameters=[4])
    assert (poisson.dtype, poisson.parameters) == ("uint32", (4.0,))


def test_functions_and_descriptor_per_generator():
    flags = random_codegen.mathdx.RandDeviceFunction
    mrg = random_codegen.random_spec("mrg32k3a", "uniform").functions
    assert mrg & flags.SKIP_SEQUENCE and mrg & flags.SKIP_SUBSEQUENCE and mrg & flags.SKIP_OFFSET
    sobol = random_codegen.random_spec("sobol32", "uniform").functions
    assert sobol & flags.SKIP_OFFSET and not sobol & flags.SKIP_SUBSEQUENCE
    assert not random_codegen.random_spec("scrambled_sobol32", "normal").functions & flags.SKIP_OFFSET
    spec = random_codegen.random_spec("philox4_32_10", "normal", np.float64, parameters=(2, 0.5), philox_rounds=7)
    library, operators = random_codegen.descriptor(spec, H100, parameters_operator=True)  # libmathdx 0.3.1
    assert library == "curanddx"
    operators = dict(operators)
    assert operators["PHILOX_ROUNDS"] == 7 and operators["DISTRIBUTION_PARAMETERS"] == (2.0, 0.5)
    assert operators["SM"] == 900 and operators["GENERATE_METHOD"] == 2
    defaults = dict(random_codegen.descriptor(random_codegen.random_spec("xorwow", "uniform"), H100, True)[1])
    assert "DISTRIBUTION_PARAMETERS" not in defaults and "PHILOX_ROUNDS" not in defaults
    # 0.4: the parameters go to generate at run time, through the entry point
    assert "DISTRIBUTION_PARAMETERS" not in dict(random_codegen.descriptor(spec, H100, parameters_operator=False)[1])


@pytest.mark.parametrize("distribution, dtype, parameters, expected", [
    ("normal", np.float64, (2.0, 0.5), ("double", (2.0, 0.5))),
    ("uniform", np.float32, (-1.0, 3.0), ("float", (-1.0, 3.0))),
    ("poisson", np.uint32, (4.5,), ("double", (4.5, 0.0))),  # lambda is a double whatever the values
    ("uniform_bits", np.uint32, None, ("unsigned int", (0.0, 0.0))),  # unused
])
def test_the_parameters_libmathdx_04s_generate_reads(distribution, dtype, parameters, expected):
    spec = random_codegen.random_spec("xorwow", distribution, dtype, parameters=parameters)
    assert random_codegen.parameter_values(spec) == expected


def test_entry_points_pass_the_parameters_to_04s_generate():
    spec = random_codegen.random_spec("xorwow", "normal", np.float32, parameters=(2.0, 0.25), normal_method="icdf")
    symbols = {"init": "curanddx_init", "generate": "curanddx_generate", "skip_offset": "curanddx_skip"}
    old = random_codegen.wrapper_source(spec, symbols, "p")
    new = random_codegen.wrapper_source(spec, symbols, "p", parameters_argument=True)
    assert "curanddx_generate(void*, void*);" in old and "curanddx_generate(state, values);" in old
    assert "curanddx_generate(void*, void*, void*);" in new
    assert "float parameters[2] = {static_cast<float>(2.0), static_cast<float>(0.25)};" in new
    assert "curanddx_generate(state, values, parameters);" in new


def _pseudo_caller(code, spec, value_type):
    """C++ calling every generated function of a pseudo-random spec by its documented signature."""
    symbols = code.symbols
    # libmathdx 0.4's generate takes the distribution's parameters as a third argument
    parameters = not random_codegen.mathdx.features().distribution_parameters_operator
    kind, values = random_codegen.parameter_values(spec)
    extra = f", {kind}*" if parameters else ""
    declarations = (
        f'extern "C" __device__ void {symbols["init"]}(unsigned long long*, unsigned long long*, '
        f'unsigned long long*, void*);\n'
        f'extern "C" __device__ void {symbols["generate"]}(void*, {value_type}*{extra});\n'
        f'extern "C" __device__ void {symbols["skip_offset"]}(void*, unsigned long long*);\n'
        f'extern "C" __device__ void {symbols["skip_subsequence"]}(void*, unsigned long long*);\n'
    )
    if "skip_sequence" in symbols:
        declarations += f'extern "C" __device__ void {symbols["skip_sequence"]}(void*, unsigned long long*);\n'
    body = (
        f"    alignas(16) unsigned char state[{code.state_size}];\n"
        f"    unsigned long long seed = 1234, subsequence = threadIdx.x, offset = 0, skip = 3;\n"
        f"    {symbols['init']}(&seed, &subsequence, &offset, state);\n"
        f"    {symbols['skip_offset']}(state, &skip);\n"
        f"    {symbols['skip_subsequence']}(state, &skip);\n"
        + (f"    {symbols['skip_sequence']}(state, &skip);\n" if "skip_sequence" in symbols else "")
        + f"    {value_type} out[{spec.values_per_call}];\n"
        f"    {kind} parameters[2] = {{{values[0]}, {values[1]}}};\n"
        f"    {symbols['generate']}(state, out{', parameters' if parameters else ''});\n"
        f"    (({value_type}*)p[0])[threadIdx.x] = out[0];\n"
    )
    return declarations, body


@needs_mathdx
@pytest.mark.parametrize("generator, distribution, dtype, value_type, state_size", [
    ("xorwow", "uniform", np.float32, "float", 48),
    ("philox4_32_10", "normal", np.float64, "double", 32),
    ("mrg32k3a", "poisson", np.uint32, "unsigned int", 48),
])
def test_pseudo_random_functions_link_with_their_c_signatures(generator, distribution, dtype, value_type,
                                                              state_size):
    spec = random_codegen.random_spec(generator, distribution, dtype)
    code = random_codegen.random_code(spec, H100)
    assert code.state_size == state_size and code.state_alignment in (4, 8, 16)
    skips = {"skip_offset", "skip_subsequence"} | ({"skip_sequence"} if generator == "mrg32k3a" else set())
    assert set(code.symbols) == {"generate", "init"} | skips
    assert all(name.startswith("curanddx_") for name in code.symbols.values())
    assert random_codegen.random_code(spec, H100) == code  # from the cache, the same
    declarations, body = _pseudo_caller(code, spec, value_type)
    assert link_calls(None, [code.code], declarations=declarations, body=body)
    with pytest.raises(AssertionError, match="Unresolved extern function 'curanddx_not_generated'"):
        link_calls(None, [code.code], declarations=declarations + 'extern "C" __device__ void '
                   "curanddx_not_generated(void*);\n", body=body + "    curanddx_not_generated(p[0]);\n")


# what libmathdx 0.3.1.9 compiles, both ways: (generator, distribution, dtype, method, normal method)
ACCEPTED = [
    ("xorwow", "normal", "float64", "pair", "box_muller"),
    ("philox4_32_10", "uniform", "float64", "pair", None),
    ("pcg", "normal", "float32", "single", "icdf"),
]
REFUSED = [
    ("xorwow", "uniform", "float64", "pair", None),
    ("philox4_32_10", "uniform", "float32", "pair", None),
    ("philox4_32_10", "poisson", "uint32", "quad", None),
    ("xorwow", "normal", "float32", "single", "box_muller"),
]


@needs_mathdx
@pytest.mark.parametrize("combination", ACCEPTED + REFUSED, ids=lambda c: "-".join(str(x) for x in c))
def test_the_table_agrees_with_libmathdx(combination):
    generator, distribution, dtype, method, normal_method = combination
    accepted = method in random_codegen.supported_methods(generator, distribution, dtype, normal_method)
    assert accepted == (combination in ACCEPTED)
    spec = random_codegen.RandomSpec(generator, distribution, dtype, method, normal_method,
                                     random_codegen._DEFAULT_PARAMETERS[distribution], 10)
    plain = random_codegen.descriptor(spec, H100)
    if accepted:
        assert len(random_codegen.descriptors.get_code(plain, H100).code) > 1000
    else:
        with pytest.raises(random_codegen.mathdx.MathdxError, match="COMMONDX_COMPILATION_ERROR"):
            random_codegen.descriptors.get_code(plain, H100)


_SYMBOLS = {"init": "curanddx_init_x", "generate": "curanddx_generate_x", "skip_offset": "curanddx_skip_offset_x"}


@pytest.mark.parametrize("generator, offset_text", [
    ("xorwow", "unsigned long long outputs = offset;"),
    ("philox4_32_10", "unsigned long long outputs = (offset % 4 == 0 ? offset / 4 : (__trap(), 0ull));"),
])
def test_pseudo_random_entry_points_convert_offsets(generator, offset_text):
    spec = random_codegen.random_spec(generator, "uniform", "float32")
    source = random_codegen.wrapper_source(spec, _SYMBOLS, "entry")
    assert offset_text in source and "curanddx_init_x(&seed, &subsequence, &outputs, state);" in source
    skip = "n % 4 == 0 ? n / 4" if generator == "philox4_32_10" else "unsigned long long count = n;"
    assert skip in source and "void entry_generate(void* state, float* out)" in source


@pytest.mark.parametrize("generator, word, bits, constants", [
    ("sobol32", "unsigned int", 32, "nullptr"),
    ("scrambled_sobol64", "unsigned long long", 64, "constants + dimension"),
])
def test_sobol_entry_points_hand_curanddx_the_dimensions_row(generator, word, bits, constants):
    spec = random_codegen.random_spec(generator, "uniform", "float64")
    symbols = {k: v for k, v in _SYMBOLS.items() if generator == "sobol32" or k != "skip_offset"}
    source = random_codegen.wrapper_source(spec, symbols, "entry")
    assert f"void entry_init(unsigned long long dimension, {word}* vectors," in source
    assert f"curanddx_init_x(&first, vectors + dimension * {bits}, &offset, {constants}, state);" in source
    assert ("entry_skip_offset" in source) == (generator == "sobol32")
