#!/usr/bin/env bash
# Make the carry folders of GPU calls that run nvmathx under numba-cuda-mlir, each small enough to
# travel with the checkout (64 MiB in all per call):
#
#   scripts/recipe pack-numba-cuda-mlir-call [VERSION]     (default 0.6.0; run once per checkout)
#
#   .whl-mlir/numba_cuda_mlir-VERSION.tar.xz   numba-cuda-mlir's installed tree (its wheel is 71 MB),
#                                              without its C headers, xz -9e (~47 MB)
#   .whl-device/device-wheels.tar.xz           libmathdx, cffi and pycparser from .whl (~13 MB)
#   .whl-curand/curand-headers.tar.xz          cuRAND's headers (nvidia-curand's wheel, 77 MB, holds
#                                              them): the device RNG tests' reference kernels
#                                              (curand_kernel.h through NVRTC) include them (~0.2 MB)
#
# scripts/gpu-check unpacks them into /tmp/site. Both compilers (the usual session), two calls while
# the machine stays warm: carry [".whl-mlir"] with GPU_CHECK_TEST_PATHS="-" (installs), then carry
# [".whl", ".whl-curand"] for the tests and suites (numpy 2.3 from .whl serves both compilers).
# numba-cuda-mlir alone on the image's numpy: carry [".whl-mlir", ".whl-device"] (numba-cuda 0.30
# cannot compile on that numpy, so its half of the tests skips). The checkout with .whl-mlir and
# .whl-device together is near the 64 MiB limit; .whl-curand travels with .whl instead.
# Needs .whl (the GPU wheels, as scripts/gpu-check --help describes) and network access to PyPI.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION="${1:-0.6.0}"
for folder in .whl-mlir .whl-device .whl-curand; do
    grep -qx "/$folder/" .git/info/exclude 2>/dev/null || echo "/$folder/" >> .git/info/exclude
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p .whl-mlir
if [[ ! -s ".whl-mlir/numba_cuda_mlir-$VERSION.tar.xz" ]]; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$work" "numba-cuda-mlir==$VERSION"
    mkdir "$work/mlir" && (cd "$work/mlir" && python3 -m zipfile -e "$work"/numba_cuda_mlir-*.whl .)
    rm -rf "$work/mlir/numba_cuda_mlir/_mlir/_mlir_libs/include"  # headers for building extensions
    tar -C "$work/mlir" -cf - . | xz -T0 -9e > ".whl-mlir/numba_cuda_mlir-$VERSION.tar.xz"
fi

mkdir -p .whl-device "$work/device"
for wheel in .whl/nvidia_libmathdx_cu13-*.whl .whl/cffi-*.whl .whl/pycparser-*.whl; do
    [[ -e "$wheel" ]] || { echo "missing $wheel: put the GPU wheels in .whl first" >&2; exit 1; }
    (cd "$work/device" && python3 -m zipfile -e "$OLDPWD/$wheel" .)
done
tar -C "$work/device" -cf - . | xz -T0 -9e > .whl-device/device-wheels.tar.xz

mkdir -p .whl-curand
if [[ ! -s .whl-curand/curand-headers.tar.xz ]]; then
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$work/curand" "nvidia-curand==10.4.*"
    mkdir "$work/curand-headers"
    (cd "$work/curand-headers" && python3 -c 'import sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
for name in archive.namelist():
    if name.endswith(".h"):
        archive.extract(name, ".")' "$work"/curand/nvidia_curand-*.whl)
    tar -C "$work/curand-headers" -cf - . | xz -T0 -9e > .whl-curand/curand-headers.tar.xz
fi
ls -la .whl-mlir .whl-device .whl-curand
du -cb .whl-mlir .whl-device | tail -1
