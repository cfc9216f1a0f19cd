"""cuRANDDx device functions as plain data: a generator and distribution checked against what
libmathdx generates (0.3.1.9 and 0.4.2), the descriptor that generates them, their code and their traits.

libmathdx reports an invalid combination only when it compiles the code (an NVRTC error, seconds
later), so :func:`random_spec` refuses what it cannot generate first, from
:func:`supported_methods` (found by compiling the combinations with libmathdx 0.3.1.9; the
tests compile a sample of both kinds on 0.4.2 as well).

One LTO-IR object holds every function of a spec: generate, state initialisation and the
skip-aheads the generator has; cuRANDDx names them itself (the ``SYMBOL_*`` traits). Their C
signatures (libcuranddx.h) take every argument by pointer:

- generate ``void(void* state, T* out)``, ``out`` holding 1, 2 or 4 values (the method); from
  libmathdx 0.4 ``void(void* state, T* out, P* params)``, the distribution's parameters at run time
  (``P`` is ``T``, or double for Poisson), where 0.3.1 takes them as the descriptor's
  ``DISTRIBUTION_PARAMETERS``. The entry points below hide the difference: kernels call the same
  ``generate(state, out)`` on either release, the spec's parameters baked into the entry point;
- init, pseudo-random ``void(unsigned long long* seed, unsigned long long* subsequence,
  unsigned long long* offset, void* state)``; quasi-random ``void(unsigned* dimension,
  direction_vector* vectors, offset* offset, scramble_constant* constants, void* state)``;
- skip offset ``void(void* state, offset* n)``; skip subsequence / sequence
  ``void(void* state, unsigned long long* n)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._bindings import mathdx
from .._core.dtypes import dtype_among
from .._core.errors import OptionsError
from . import cache, descriptors, nvrtc
from .target import Target

__all__ = ["GENERATORS", "DISTRIBUTIONS", "METHODS", "NORMAL_METHODS", "SKIPS", "RandomSpec", "RandomCode",
           "supported_methods", "random_spec", "descriptor", "random_code", "direction_bits", "wrapper_source",
           "wrapper_code"]

GENERATORS = {
    "xorwow": mathdx.RandGenerator.XORWOW,
    "mrg32k3a": mathdx.RandGenerator.MRG32K3A,
    "philox4_32_10": mathdx.RandGenerator.PHILOX4_32,
    "pcg": mathdx.RandGenerator.PCG,
    "sobol32": mathdx.RandGenerator.SOBOL32,
    "scrambled_sobol32": mathdx.RandGenerator.SCRAMBLED_SOBOL32,
    "sobol64": mathdx.RandGenerator.SOBOL64,
    "scrambled_sobol64": mathdx.RandGenerator.SCRAMBLED_SOBOL64,
}
QUASI_RANDOM = frozenset({"sobol32", "scrambled_sobol32", "sobol64", "scrambled_sobol64"})
DISTRIBUTIONS = {
    "uniform_bits": mathdx.RandDistribution.UNIFORM_BITS,
    "uniform": mathdx.RandDistribution.UNIFORM,
    "normal": mathdx.RandDistribution.NORMAL,
    "log_normal": mathdx.RandDistribution.LOG_NORMAL,
    "poisson": mathdx.RandDistribution.POISSON,
}
METHODS = {"single": (mathdx.RandGenerateMethod.SINGLE, 1), "pair": (mathdx.RandGenerateMethod.PAIR, 2),
           "quad": (mathdx.RandGenerateMethod.QUAD, 4)}
_VALUE_TYPES = {"float32": mathdx.ValueType.R_32F, "float64": mathdx.ValueType.R_64F,
                "uint32": mathdx.ValueType.R_32UI, "uint64": mathdx.ValueType.R_64UI}
# the parameters each distribution takes, and their defaults (cuRANDDx's)
_PARAMETERS = {"uniform_bits": (), "uniform": ("minimum", "maximum"), "normal": ("mean", "standard deviation"),
               "log_normal": ("mean", "standard deviation"), "poisson": ("lambda",)}
_DEFAULT_PARAMETERS = {"uniform_bits": (), "uniform": (0.0, 1.0), "normal": (0.0, 1.0), "log_normal": (0.0, 1.0),
                       "poisson": (1.0,)}

NORMAL_METHODS = {"box_muller": mathdx.RandNormalMethod.BOX_MULLER, "icdf": mathdx.RandNormalMethod.ICDF}
_PHILOX = "philox4_32_10"


def supported_methods(generator: str, distribution: str, dtype: str, normal_method: str | None) -> tuple[str, ...]:
    """The generate methods libmathdx (0.3.1.9, 0.4.2) compiles for one combination, the default first; ()
    where it compiles none. Found by compiling the combinations (tests/device_api/test_random_codegen.py
    checks a sample against libmathdx): Philox generates 4 values per call (2 also in float64),
    the others 1, or 2 for a Box-Muller normal; Philox has no Poisson; the Sobol generators make
    normals by ICDF only."""
    philox = generator == _PHILOX
    if generator in QUASI_RANDOM:
        bits = "uint64" if generator.endswith("64") else "uint32"
        if distribution == "uniform_bits":
            return ("single",) if dtype == bits else ()
        if distribution in ("uniform", "normal", "log_normal") and dtype in ("float32", "float64"):
            return ("single",) if distribution == "uniform" or normal_method == "icdf" else ()
        return ("single",) if distribution == "poisson" and dtype == "uint32" else ()
    if distribution == "uniform_bits":
        return (("quad",) if philox else ("single",)) if dtype == "uint32" else ()
    if distribution == "poisson":
        return ("single",) if dtype == "uint32" and not philox else ()
    if dtype not in ("float32", "float64"):
        return ()
    if philox:
        return ("quad",) if dtype == "float32" or normal_method == "icdf" else ("quad", "pair")
    return ("pair",) if distribution in ("normal", "log_normal") and normal_method == "box_muller" else ("single",)


def _dtypes(generator: str, distribution: str) -> tuple[str, ...]:
    if distribution == "uniform_bits":
        return ("uint64",) if generator in ("sobol64", "scrambled_sobol64") else ("uint32",)
    return ("uint32",) if distribution == "poisson" else ("float32", "float64")


@dataclasses.dataclass(frozen=True)
class RandomSpec:
    """One cuRANDDx configuration (see :func:`random_spec`)."""

    generator: str
    distribution: str
    dtype: str
    method: str
    normal_method: str | None  # normal and log-normal only
    parameters: tuple[float, ...]
    philox_rounds: int

    @property
    def quasi_random(self) -> bool:
        return self.generator in QUASI_RANDOM

    @property
    def scrambled(self) -> bool:
        """A scrambled Sobol generator (its init takes scramble constants)."""
        return self.generator.startswith("scrambled_")

    @property
    def values_per_call(self) -> int:
        return METHODS[self.method][1]

    @property
    def functions(self) -> mathdx.RandDeviceFunction:
        """The device functions generated: generate, init and the skip-aheads the generator has."""
        flags = mathdx.RandDeviceFunction.GENERATE | mathdx.RandDeviceFunction.INIT_STATE
        if not self.scrambled:
            flags |= mathdx.RandDeviceFunction.SKIP_OFFSET
        if not self.quasi_random:
            flags |= mathdx.RandDeviceFunction.SKIP_SUBSEQUENCE
        if self.generator == "mrg32k3a":
            flags |= mathdx.RandDeviceFunction.SKIP_SEQUENCE
        return flags


def _choice(argument: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise OptionsError(argument, f"expected one of {', '.join(map(repr, choices))} (got {value!r})")
    return value


def random_spec(generator: str, distribution: str, dtype=None, *, method: str | None = None,
                normal_method: str | None = None, parameters=None, philox_rounds: int = 10) -> RandomSpec:
    """A checked :class:`RandomSpec`; ``OptionsError`` naming the argument for what cuRANDDx
    (through libmathdx) does not generate.

    ``dtype`` defaults to float32 (the bits' width for ``uniform_bits``, uint32 for Poisson);
    ``normal_method`` (normal and log-normal) to ``"box_muller"``, cuRAND's method (``"icdf"`` for
    the quasi-random generators); ``method`` to the first the combination supports (:func:`supported_methods`);
    ``parameters`` to cuRANDDx's defaults: (minimum, maximum) = (0, 1) for uniform, (mean, standard
    deviation) = (0, 1) for normal and log-normal (of the underlying normal), (lambda,) = (1,) for
    Poisson.
    """
    generator = _choice("generator", generator, GENERATORS)
    distribution = _choice("distribution", distribution, DISTRIBUTIONS)
    dtypes = _dtypes(generator, distribution)
    if dtype is None:
        dtype = dtypes[0]
    dtype_name = dtype_among("dtype", dtype, dtypes, f"{distribution} values are")
    if distribution in ("normal", "log_normal"):
        default = "icdf" if generator in QUASI_RANDOM else "box_muller"
        normal_method = default if normal_method is None else _choice("normal_method", normal_method, NORMAL_METHODS)
    elif normal_method is not None:
        raise OptionsError("normal_method", f"applies to normal and log_normal only (distribution is {distribution})")
    methods = supported_methods(generator, distribution, dtype_name, normal_method)
    if not methods:
        if distribution in ("normal", "log_normal") and supported_methods(generator, distribution, dtype_name, "icdf"):
            raise OptionsError("normal_method", f"{generator} generates {distribution} values by 'icdf' only")
        raise OptionsError("distribution", f"{generator} has no {distribution} distribution in cuRANDDx")
    method = methods[0] if method is None else _choice("method", method, METHODS)
    if method not in methods:
        raise OptionsError("method", f"{generator} {distribution} {dtype_name} values come with "
                                     f"{' or '.join(map(repr, methods))} (got {method!r})")
    parameters = _checked_parameters(distribution, parameters)
    if isinstance(philox_rounds, bool) or not isinstance(philox_rounds, (int, np.integer)) or philox_rounds < 1:
        raise OptionsError("philox_rounds", f"expected a positive integer (got {philox_rounds!r})")
    if generator != _PHILOX and philox_rounds != 10:
        raise OptionsError("philox_rounds", f"applies to philox4_32_10 only (generator is {generator})")
    return RandomSpec(generator, distribution, dtype_name, method, normal_method, parameters, int(philox_rounds))


def _checked_parameters(distribution: str, parameters) -> tuple[float, ...]:
    names = _PARAMETERS[distribution]
    if parameters is None:
        return _DEFAULT_PARAMETERS[distribution]
    try:
        values = tuple(float(value) for value in parameters)
    except (TypeError, ValueError):
        raise OptionsError("parameters", f"expected {len(names)} numbers ({', '.join(names)}) (got {parameters!r})") \
            from None
    if len(values) != len(names):
        raise OptionsError("parameters", f"{distribution} takes {len(names)} parameters"
                                         f"{' (' + ', '.join(names) + ')' if names else ''} (got {len(values)})")
    if not all(np.isfinite(values)):
        raise OptionsError("parameters", f"expected finite numbers (got {values})")
    if distribution == "uniform" and not values[0] < values[1]:
        raise OptionsError("parameters", f"the minimum must be below the maximum (got {values})")
    if distribution in ("normal", "log_normal") and not values[1] > 0:
        raise OptionsError("parameters", f"the standard deviation must be positive (got {values[1]})")
    if distribution == "poisson" and not values[0] > 0:
        raise OptionsError("parameters", f"lambda must be positive (got {values[0]})")
    return values


def descriptor(spec: RandomSpec, target: Target, parameters_operator: bool | None = None) -> descriptors.Descriptor:
    """The libmathdx descriptor (plain data) of ``spec``'s device functions for ``target``.

    ``parameters_operator``: whether the release takes the distribution's parameters as an operator
    (0.3.1) rather than as generate's argument (0.4); None asks the loaded libmathdx.
    """
    if parameters_operator is None:
        parameters_operator = mathdx.features().distribution_parameters_operator
    operators: list = [
        ("GENERATOR", int(GENERATORS[spec.generator])),
        ("SM", target.sm),
        ("EXECUTION", int(mathdx.Execution.THREAD)),
        ("DISTRIBUTION", int(DISTRIBUTIONS[spec.distribution])),
        ("OUTPUT_TYPE", int(_VALUE_TYPES[spec.dtype])),  # 0.3.1.9 needs it, whatever its header says
        ("GENERATE_METHOD", int(METHODS[spec.method][0])),
        ("DEVICE_FUNCTIONS", int(spec.functions)),
    ]
    if spec.normal_method is not None:
        operators.append(("NORMAL_METHOD", int(NORMAL_METHODS[spec.normal_method])))
    if spec.generator == _PHILOX:
        operators.append(("PHILOX_ROUNDS", spec.philox_rounds))
    if parameters_operator and spec.parameters and spec.parameters != _DEFAULT_PARAMETERS[spec.distribution]:
        operators.append(("DISTRIBUTION_PARAMETERS", spec.parameters))
    return ("curanddx", tuple(operators))


@dataclasses.dataclass(frozen=True)
class RandomCode:
    """The generated code of one spec: its LTO-IR, the functions' symbols and the state's layout."""

    code: bytes
    symbols: dict  # "generate", "init", "skip_offset", "skip_subsequence", "skip_sequence" -> name
    state_size: int  # bytes
    state_alignment: int  # bytes


_SYMBOL_TRAITS = {
    "generate": (mathdx.RandDeviceFunction.GENERATE, mathdx.RandTrait.SYMBOL_GENERATE_NAME),
    "init": (mathdx.RandDeviceFunction.INIT_STATE, mathdx.RandTrait.SYMBOL_INIT_STATE_NAME),
    "skip_offset": (mathdx.RandDeviceFunction.SKIP_OFFSET, mathdx.RandTrait.SYMBOL_SKIP_OFFSET_NAME),
    "skip_subsequence": (mathdx.RandDeviceFunction.SKIP_SUBSEQUENCE, mathdx.RandTrait.SYMBOL_SKIP_SUBSEQUENCE_NAME),
    "skip_sequence": (mathdx.RandDeviceFunction.SKIP_SEQUENCE, mathdx.RandTrait.SYMBOL_SKIP_SEQUENCE_NAME),
}


def random_code(spec: RandomSpec, target: Target) -> RandomCode:
    """``spec``'s LTO-IR and traits for ``target``: from the disk cache, or generated by libmathdx
    (seconds of CPU the first time)."""
    plain = descriptor(spec, target)
    functions = spec.functions

    def query(handle) -> dict:
        traits = {name: handle.trait_str(trait) for name, (flag, trait) in _SYMBOL_TRAITS.items() if flag & functions}
        traits["state_size"] = handle.trait(mathdx.RandTrait.STATE_SIZE)
        traits["state_alignment"] = handle.trait(mathdx.RandTrait.STATE_ALIGNMENT)
        return traits

    traits = descriptors.cached_query(plain, target, query)
    if "error" in traits:
        raise OptionsError("generator", f"cuRANDDx refused {spec} ({traits['error']})")
    entry = descriptors.get_code(plain, target)
    symbols = {name: traits[name] for name in _SYMBOL_TRAITS if name in traits}
    return RandomCode(entry.code, symbols, int(traits["state_size"]), int(traits["state_alignment"]))


# -- by-value entry points --------------------------------------------------------------------
# cuRANDDx's functions take every argument by pointer and write vector types (float4, ...) that
# need their alignment. Kernels call these wrappers instead: scalars by value, ``out`` any array of
# the value type, the same C ABI under both Numba compilers (as fft's row copies); LTO inlines them.

WRAPPER_FORMAT = 4  # bump when the generated source changes meaning

_C_TYPES = {"float32": "float", "float64": "double", "uint32": "unsigned int", "uint64": "unsigned long long"}

_PSEUDO_INIT = """\
extern "C" __device__ void {init}(unsigned long long*, unsigned long long*, unsigned long long*, void*);
extern "C" __device__ void {generate}({generate_parameters});

extern "C" __device__ void {prefix}_init(unsigned long long seed, unsigned long long subsequence,
                                         unsigned long long offset, void* state)
{{
    unsigned long long outputs = {to_outputs};
    {init}(&seed, &subsequence, &outputs, state);
}}

"""

_WRAPPER_SKIP = """
extern "C" __device__ void {symbol}(void*, unsigned long long*);

extern "C" __device__ void {prefix}_{name}(void* state, unsigned long long n)
{{
    unsigned long long count = {count};
    {symbol}(state, &count);
}}
"""

SKIPS = ("skip_offset", "skip_subsequence", "skip_sequence")


# Sobol: the kernel passes the whole table of direction vectors (and scramble constants) and a
# dimension; the entry point hands cuRANDDx that dimension's own vectors and constant with dimension
# 0, which reads the same whether cuRANDDx indexes the table by the dimension or takes the row.
# Offsets go by pointer to a 64-bit word whichever width cuRANDDx reads (little-endian).
_QUASI_INIT = """\
extern "C" __device__ void {init}(unsigned int*, void*, unsigned long long*, void*, void*);
extern "C" __device__ void {generate}({generate_parameters});

extern "C" __device__ void {prefix}_init(unsigned long long dimension, {word}* vectors, {constants_parameter}
                                         unsigned long long offset, void* state)
{{
    unsigned int first = 0;
    {init}(&first, vectors + dimension * {bits}, &offset, {constants}, state);
}}
"""

_GENERATE = """
extern "C" __device__ void {prefix}_generate(void* state, {value}* out)
{{
    alignas(16) {value} values[{count}];
    {generate}(state, values);
#pragma unroll
    for (int i = 0; i < {count}; ++i) out[i] = values[i];
}}
"""

# libmathdx 0.4: generate takes the parameters (two of the value type, or lambda as a double for
# Poisson; unused for uniform_bits) by pointer at run time.
_GENERATE_WITH_PARAMETERS = """
extern "C" __device__ void {prefix}_generate(void* state, {value}* out)
{{
    alignas(16) {value} values[{count}];
    {parameter} parameters[2] = {{{parameters}}};
    {generate}(state, values, parameters);
#pragma unroll
    for (int i = 0; i < {count}; ++i) out[i] = values[i];
}}
"""


def direction_bits(generator: str) -> int:
    """Bits of a Sobol generator's direction vectors (and words per dimension)."""
    return 64 if generator.endswith("64") else 32


def parameter_values(spec: RandomSpec) -> tuple[str, tuple[float, float]]:
    """(C type, two values) of the parameters libmathdx 0.4's generate reads: the value type's (double
    for Poisson's lambda), the second value 0 where the distribution takes one, both 0 for bits."""
    kind = "double" if spec.distribution == "poisson" else _C_TYPES[spec.dtype]
    first, second = (tuple(spec.parameters) + (0.0, 0.0))[:2]
    return kind, (first, second)


def wrapper_source(spec: RandomSpec, symbols: dict, prefix: str, parameters_argument: bool = False) -> str:
    """The CUDA C++ of the entry points ``{prefix}_init``, ``{prefix}_generate`` and
    ``{prefix}_<skip>`` for each skip-ahead in ``symbols``. ``parameters_argument``: cuRANDDx's
    generate takes the distribution's parameters as its third argument (libmathdx 0.4)."""
    generate_parameters = "void*, void*, void*" if parameters_argument else "void*, void*"
    if spec.quasi_random:
        bits = direction_bits(spec.generator)
        word = _C_TYPES[f"uint{bits}"]
        source = _QUASI_INIT.format(
            prefix=prefix, init=symbols["init"], generate=symbols["generate"], word=word, bits=bits,
            constants_parameter=f"{word}* constants," if spec.scrambled else "",
            constants="constants + dimension" if spec.scrambled else "nullptr", generate_parameters=generate_parameters)
    else:
        source = _PSEUDO_INIT.format(prefix=prefix, init=symbols["init"], generate=symbols["generate"],
                                     to_outputs=_offset_in_outputs(spec, "offset"),
                                     generate_parameters=generate_parameters)
    if parameters_argument:
        kind, values = parameter_values(spec)
        source += _GENERATE_WITH_PARAMETERS.format(
            prefix=prefix, value=_C_TYPES[spec.dtype], count=spec.values_per_call, generate=symbols["generate"],
            parameter=kind, parameters=", ".join(f"static_cast<{kind}>({float(value)!r})" for value in values))
    else:
        source += _GENERATE.format(prefix=prefix, value=_C_TYPES[spec.dtype], count=spec.values_per_call,
                                   generate=symbols["generate"])
    for name in SKIPS:
        if name in symbols:
            count = _offset_in_outputs(spec, "n") if name == "skip_offset" else "n"
            source += _WRAPPER_SKIP.format(prefix=prefix, name=name, symbol=symbols[name], count=count)
    return source


def _offset_in_outputs(spec: RandomSpec, variable: str) -> str:
    """C expression: an offset in values (cuRAND's unit) as cuRANDDx counts it. cuRANDDx counts
    Philox offsets in outputs of 4 values (checked against curand_init); an offset that
    is not a multiple of 4 has no cuRANDDx state, so it stops the kernel (a trap) rather than
    shifting the stream silently."""
    if spec.generator != _PHILOX:
        return variable
    return f"({variable} % 4 == 0 ? {variable} / 4 : (__trap(), 0ull))"


def wrapper_code(spec: RandomSpec, code: RandomCode, target: Target) -> cache.CodeEntry:
    """The LTO-IR of :func:`wrapper_source` (NVRTC through cuda.core, cached on disk); its symbol
    is the entry points' common prefix."""
    parameters_argument = not mathdx.features().distribution_parameters_operator
    key = {"kind": "device-random-entry-points", "format": WRAPPER_FORMAT, "spec": dataclasses.asdict(spec),
           "symbols": code.symbols, "target": target.name, "nvrtc": nvrtc.nvrtc_version(),
           "parameters_argument": parameters_argument}
    prefix = cache.symbol_for("nvmathx_random", key)
    return nvrtc.cached_ltoir(key, prefix, wrapper_source(spec, code.symbols, prefix, parameters_argument),
                              target.name)
