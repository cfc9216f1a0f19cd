#!/usr/bin/env python3
"""Count the SASS instructions of the generated kernels the benchmarks time, without a GPU.

    scripts/recipe count-sass fused TYPE SIZE EPT FPB [--window] [--min-blocks N] [--staged] [--strided]
    scripts/recipe count-sass conv EPT FPB
    scripts/recipe count-sass fill GENERATOR {seed|subsequence} CALLS [DISTRIBUTION]
    scripts/recipe count-sass cast IN OUT {none|relu|gelu|drelu|dgelu}
    (each with [--nvdisasm PATH])

``fused``: the fused FFT engine's kernel for 16384 rows of SIZE points (TYPE C2C, R2C or C2R,
float32) at cuFFTDx's (elements_per_thread, ffts_per_block) = (EPT, FPB), as a plan of contiguous
rows builds it (``--strided``: rows with element strides of 2), with the ``fft_callbacks`` suite's
window as load callback (``--window``, R2C). ``conv``: the kernel of
``examples/device_fft_convolution.py`` (1024 points). ``fill``: ``scripts/recipe tune-rng``'s fill loop.
``cast``: the float8 layers' cast-transpose kernel (``nvmathx.torch._float8.kernels``) from IN
(bfloat16, float16, float32) to OUT (float8_e4m3fn, float8_e5m2) as one launch with that elementwise
op runs it (the kernel's other ops left out).

Each is built for sm_90 (generated code, NVRTC / numba-cuda, nvJitLink with LTO), disassembled with
nvdisasm (``pip download nvidia-cuda-nvdisasm``: ``nvidia/cu13/bin/nvdisasm``); printed: the
instructions a thread runs once (static count; for ``fill``, the longest loop's body), and the
most frequent opcodes. Memory-bound kernels that issue fewer instructions overlap their loads
better; issue-bound ones (``fill``) take at least count / (4 schedulers x clock) per warp and SM.
"""

import argparse
import collections
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

SM = (9, 0)
_INSTRUCTION = re.compile(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)")


def load_script(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def numba_cubin(pyfunc, argument_types):
    """The sm_90 cubin of a numba-cuda kernel calling nvmathx device functions (linked with LTO)."""
    from numba.cuda.compiler import _compile_pyfunc_with_fixup

    from helpers.compilers import load

    library, _ = _compile_pyfunc_with_fixup(load("numba-cuda").bind(pyfunc), argument_types, device=False, cc=SM,
                                            opt=True, abi="numba")
    code = library.get_cubin(cc=SM)
    return bytes(code.code) if hasattr(code, "code") else bytes(code)


def fused_cubin(args):
    import nvmathx.fft as nfft
    from nvmathx._codegen import fused_fft
    from nvmathx._fftcore.engine import FusedRows
    from nvmathx.fft._fused import _descriptor, _kernel_options

    size, step = args.size, 2 if args.strided else 1
    half = size // 2 + 1
    lengths = {"C2C": (size, size), "R2C": (size, half), "C2R": (half, size)}[args.type]
    rows = FusedRows(args.type, size, 16384, "float32", lengths[0] * step, step, lengths[1] * step, step)
    knobs = (args.ept, args.fpb, args.min_blocks, args.staged)
    fft = _descriptor(rows, "forward" if args.type == "C2C" else None, SM, knobs)
    prolog = None
    if args.window:
        from benchmarks.suites.fft_callbacks import windowed

        prolog = nfft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32", target=SM)
    return fused_fft.fused_kernel(fft, prolog=prolog, **_kernel_options(rows, fft, SM, knobs)).cubin


def conv_cubin(args):
    from numba.cuda import types

    from nvmathx.device_api import FFT

    example = load_script("device_fft_convolution", os.path.join(ROOT, "examples", "device_fft_convolution.py"))
    common = dict(size=1024, precision=np.float32, elements_per_thread=args.ept, ffts_per_block=args.fpb, sm=SM)
    from numba import cuda

    kernel = example.build_kernel(FFT(direction="forward", **common), FFT(direction="inverse", **common), cuda,
                                  taps_first=args.taps_first)
    rows = types.complex64[:, ::1]
    return numba_cubin(kernel.py_func, (rows, types.complex64[::1], rows))


def fill_cubin(args):
    from numba.cuda import types

    from nvmathx.device_api import Random

    integer = args.distribution == "uniform_bits"
    rng = Random(args.generator, args.distribution, np.uint32 if integer else np.float32, sm=SM)
    kernel = load_script("tune_rng", os.path.join(ROOT, "benchmarks", "recipes", "tune-rng.py")).fill_kernel(
        rng, args.apart_by == "seed", args.calls)
    return numba_cubin(kernel.py_func, ((types.uint32 if integer else types.float32)[::1], types.uint64))


def cast_cubin(args):
    from cuda.core import Program, ProgramOptions

    from nvmathx._codegen.float_formats import FORMAT_CODES
    from nvmathx.torch._float8 import kernels

    name = f"cast_transpose<{FORMAT_CODES[args.input]}, {FORMAT_CODES[args.output]}>"
    options = ProgramOptions(arch=f"sm_{SM[0]}{SM[1]}", std="c++17", define_macro=("CAST_OP", f"OP_{args.op.upper()}"))
    program = Program(kernels.KERNEL_SOURCE, "c++", options)  # CAST_OP: the kernel built for that op alone
    return bytes(program.compile("cubin", name_expressions=(name,)).code)


def registers(cubin):
    """Registers per thread of the cubin's kernels, from its ``.nv.info`` section: entries of a
    format byte, an attribute byte and (format 4) a 16-bit size; EIATTR_REGCOUNT (0x2f) holds the
    function's symbol index and its register count."""
    import struct

    section_offset, = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, section_offset + i * entry_size) for i in range(count)]
    names_at = sections[names_index][4]
    counts = []
    for name_at, _, _, _, offset, size, *_ in sections:
        if cubin[names_at + name_at:].startswith(b".nv.info\0"):
            at = offset
            while at < offset + size:
                kind, attribute = cubin[at], cubin[at + 1]
                length = struct.unpack_from("<H", cubin, at + 2)[0] if kind == 4 else (2 if kind == 3 else 0)
                if attribute == 0x2F:
                    counts.append(struct.unpack_from("<II", cubin, at + 4)[1])
                at += 4 + length if kind == 4 else 2 + length + (2 if kind == 3 else 0)
    return counts


def longest_loop(lines):
    """The instructions between a backward branch and its label, for the longest such loop."""
    labels = {line.strip()[:-1]: i for i, line in enumerate(lines) if re.match(r"^\.L_x_\d+:$", line.strip())}
    longest = []
    for i, line in enumerate(lines):
        branch = re.search(r"BRA `\((\.L_x_\d+)\)", line)
        if branch and labels.get(branch.group(1), i) < i:
            body = lines[labels[branch.group(1)] + 1:i + 1]
            longest = max(longest, body, key=lambda b: sum(1 for line in b if _INSTRUCTION.match(line)))
    return longest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvdisasm", default="nvdisasm")
    kinds = parser.add_subparsers(dest="kind", required=True)
    fused = kinds.add_parser("fused")
    fused.add_argument("type", choices=["C2C", "R2C", "C2R"])
    for name in ("size", "ept", "fpb"):
        fused.add_argument(name, type=int)
    fused.add_argument("--window", action="store_true")
    fused.add_argument("--min-blocks", type=int)
    fused.add_argument("--staged", action="store_true")
    fused.add_argument("--strided", action="store_true")
    conv = kinds.add_parser("conv")
    conv.add_argument("ept", type=int)
    conv.add_argument("fpb", type=int)
    conv.add_argument("--taps-first", action="store_true", help="build_kernel's taps_first=True")
    fill = kinds.add_parser("fill")
    fill.add_argument("generator")
    fill.add_argument("apart_by", choices=["seed", "subsequence"])
    fill.add_argument("calls", type=int)
    fill.add_argument("distribution", nargs="?", default="normal")
    cast = kinds.add_parser("cast")
    cast.add_argument("input", choices=["bfloat16", "float16", "float32"])
    cast.add_argument("output", choices=["float8_e4m3fn", "float8_e5m2"])
    cast.add_argument("op", choices=["none", "relu", "gelu", "drelu", "dgelu"])
    args = parser.parse_args()
    if shutil.which(args.nvdisasm) is None:
        parser.error(f"--nvdisasm: {args.nvdisasm!r} not found (pip download nvidia-cuda-nvdisasm: "
                     "nvidia/cu13/bin/nvdisasm)")
    cubin = {"fused": fused_cubin, "conv": conv_cubin, "fill": fill_cubin, "cast": cast_cubin}[args.kind](args)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        lines = subprocess.run([args.nvdisasm, "-c", file.name], capture_output=True, text=True,
                               check=True).stdout.splitlines()
    if os.environ.get("COUNT_SASS_KEEP"):
        with open(os.environ["COUNT_SASS_KEEP"], "w") as file:
            file.write("\n".join(lines))
    if args.kind == "fill":
        lines = longest_loop(lines)
    opcodes = collections.Counter(m.group(1) for m in map(_INSTRUCTION.match, lines) if m)
    where = "in the longest loop" if args.kind == "fill" else "in the kernel"
    print("registers per thread:", ", ".join(map(str, registers(cubin))))
    print(f"{sum(opcodes.values())} instructions {where}; " +
          ", ".join(f"{op} {count}" for op, count in opcodes.most_common(12)))


if __name__ == "__main__":
    main()
