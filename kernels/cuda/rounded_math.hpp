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

/// Whether every double within relative distance `tol` of v converts to the same float as v.
/// Rounding to nearest is monotonic, so the two ends of the interval decide. Used after a sum in
/// double taken in a different order than the CPU's: when the two sums can differ by at most
/// `tol` relative and this holds, the floats made from them are the same bits. False for NaN.
BITNET_DEVICE bool same_float_within(double v, double tol) {
    return static_cast<float>(v * (1.0 - tol)) == static_cast<float>(v * (1.0 + tol));
}

/// The relative distance two sums in double of the same n non-negative terms can be apart when
/// taken in different orders, followed by `extra_ops` more correctly rounded operations: each
/// is within (n - 1 + extra_ops)·2^-53 (to first order) of the exact value, whatever the order;
/// twice that, padded for the second-order terms and for the `slots` zero partials a block adds
/// (additions of zero are exact, but counting them keeps the bound obviously safe).
BITNET_DEVICE double order_tolerance(double n, double slots, double extra_ops) {
    return 4.0 * (n + slots + extra_ops + 2.0) * 0x1p-53;
}

} // namespace bitnet::kernels::cuda
