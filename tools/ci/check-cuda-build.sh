#!/usr/bin/env bash
# CI: where nvcc exists (on PATH or under the toolkit's usual prefix), the dev build must have
# compiled the CUDA kernels (BITNET_CUDA=AUTO), for sm_80 and sm_90, with the device code in the
# library; then the `gpu` suite runs (on a machine without a GPU each case prints a skip line and
# passes). Where no nvcc exists, says so and passes: CUDA is optional.
# Usage: tools/ci/check-cuda-build.sh [build-dir]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/dev}

nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
    echo "check-cuda-build: no nvcc on this machine: the CUDA kernels are not compiled (BITNET_CUDA=AUTO)"
    exit 0
fi
echo "check-cuda-build: $("$nvcc" --version | tail -n 2 | head -n 1)"

lib="$build/kernels/libbitnet_kernels_cuda.a"
if [ ! -f "$lib" ]; then
    echo "check-cuda-build: FAIL: nvcc exists but $lib was not built (is BITNET_CUDA OFF in $build?)" >&2
    exit 1
fi
if ! readelf -S "$lib" | grep -q nv_fatbin; then
    echo "check-cuda-build: FAIL: $lib holds no device code (.nv_fatbin)" >&2
    exit 1
fi
for arch in 80 90; do
    if ! grep -q "device_ops.cu" "$build/compile_commands.json" ||
        ! grep "device_ops.cu" "$build/compile_commands.json" | grep -q "code=\[compute_$arch,sm_$arch\]"; then
        echo "check-cuda-build: FAIL: device_ops.cu is not compiled for sm_$arch" >&2
        exit 1
    fi
done
echo "check-cuda-build: $lib has device code for sm_80 and sm_90"

out=$(ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error 2>&1) || {
    echo "$out"
    echo "check-cuda-build: FAIL: the gpu suite failed" >&2
    exit 1
}
echo "$out" | tail -n 4
