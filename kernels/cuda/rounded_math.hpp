// Float arithmetic for kernel bodies that must round exactly where the CPU kernels round.
// nvcc fuses a written `a * b + c` into one FMA by default (--fmad=true) and may rewrite
// `1.0f / sqrtf(v)`; the CPU kernels these bodies are compared with are built so that the
// compiler never fuses (baseline x86-64 has no FMA; the SIMD files use -ffp-contract=off) and ask
// for an FMA explicitly (fmaf) where the definition has one. The device intrinsics __fmul_rn,
// __fadd_rn, ... are never fused or rewritten, whatever the flags; on the host the plain operators
// already round once each.
#pragma once

#include "kernels/cuda/grid.hpp"

#include <cmath>

namespace bitnet::kernels::cuda {

BITNET_DEVICE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

BITNET_DEVICE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

BITNET_DEVICE float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

/// 1 / sqrt(v), each step correctly rounded (never the approximate reciprocal square root).
BITNET_DEVICE float rsqrt_rn(float v) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(1.0f, __fsqrt_rn(v));
#else
    return 1.0f / sqrtf(v);
#endif
}

} // namespace bitnet::kernels::cuda
