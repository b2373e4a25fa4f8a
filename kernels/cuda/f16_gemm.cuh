// The F16 product of the tied logits on the device: kernels::f16_matmul's defined order, bit for
// bit. 16 threads per (row, token) are f16_matmul's 16 lanes: lane l accumulates the columns
// k ≡ l (mod 16) in increasing k with one fused multiply-add each, and a 16-wide shuffle
// butterfly (offsets 8, 4, 2, 1) is exactly the CPU's fold by halves (lane i += lane i + w; the
// partner's sum is the same two operands, and float addition is commutative).
// Not cuBLAS GemmEx, which the issue allows: cuBLAS's summation order is its own and undocumented,
// so its logits could not be checked against the CPU's here, where there is no GPU; this kernel
// runs, the same source, on the simulated grid in every test.
// Layout: a block is 16 groups of 16 lanes = 16 weight rows × 4 tokens. The tokens' activations,
// rounded to F16 once per block with the CPU's own f32_to_f16, are staged in shared memory 512
// columns at a time; a group reads 16 consecutive halves (32 bytes) of its row per step.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/f16.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#else
#include <cmath>
#endif

namespace bitnet::kernels::cuda {

/// An F16 weight widened to float: exact both ways, so the device's conversion instruction and
/// the CPU's f16_to_f32 give the same float.
BITNET_DEVICE float widen_f16(std::uint16_t h) {
#if defined(__CUDACC__)
    return __half2float(__ushort_as_half(h));
#else
    return f16_to_f32(h);
#endif
}

BITNET_DEVICE float fused_multiply_add(float a, float b, float c) {
#if defined(__CUDACC__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

struct f16_gemm_kernel {
    using args = f16_gemm_args;
    static constexpr unsigned threads = 256;
    static constexpr unsigned lanes = 16; ///< kernels::f16_dot_lanes
    static constexpr unsigned rows_per_block = threads / lanes;
    static constexpr unsigned tokens_per_block = 4;
    static constexpr unsigned chunk = 512; ///< columns staged at once, a multiple of lanes

    static BITNET_DEVICE void body(const block& b, const args& a) {
        BITNET_SHARED float x_s[tokens_per_block][chunk];
        const std::uint32_t t0 = b.y() * tokens_per_block;
        const std::uint32_t n_tok =
            a.n_rows - t0 < tokens_per_block ? a.n_rows - t0 : tokens_per_block;
        const std::uint32_t first_row = b.x() * rows_per_block;
        per_thread<float> acc[tokens_per_block];
        b.threads([&](unsigned t) {
            for (unsigned tt = 0; tt < tokens_per_block; ++tt)
                acc[tt][t] = 0.0f;
        });
        for (std::uint32_t k0 = 0; k0 < a.cols; k0 += chunk) {
            const std::uint32_t kc = a.cols - k0 < chunk ? a.cols - k0 : chunk;
            b.threads([&](unsigned t) {
                for (unsigned i = t; i < tokens_per_block * chunk; i += b.size()) {
                    const unsigned tt = i / chunk;
                    const unsigned k = i % chunk;
                    float v = 0.0f;
                    if (tt < n_tok && k < kc) {
                        const std::uint32_t tok = t0 + tt;
                        const std::size_t src =
                            a.x_rows != nullptr ? static_cast<std::size_t>(a.x_rows[tok]) : tok;
                        v = f16_to_f32(f32_to_f16(a.x[src * a.ldx + k0 + k]));
                    }
                    x_s[tt][k] = v;
                }
            });
            b.sync();
            b.threads([&](unsigned t) {
                const std::uint32_t m = first_row + t / lanes;
                if (m >= a.rows)
                    return;
                const std::uint16_t* wr = a.w + static_cast<std::size_t>(m) * a.cols + k0;
                // k0 is a multiple of 16, so column k0 + kk belongs to lane kk % 16.
                for (unsigned kk = t % lanes; kk < kc; kk += lanes) {
                    const float w = widen_f16(wr[kk]);
                    for (unsigned tt = 0; tt < tokens_per_block; ++tt)
                        acc[tt][t] = fused_multiply_add(w, x_s[tt][kk], acc[tt][t]);
                }
            });
            b.sync();
        }
        for (unsigned tt = 0; tt < tokens_per_block; ++tt)
            group_sum(b, acc[tt], lanes);
        b.threads([&](unsigned t) {
            const std::uint32_t m = first_row + t / lanes;
            if (t % lanes != 0 || m >= a.rows)
                return;
            for (unsigned tt = 0; tt < n_tok; ++tt)
                a.y[static_cast<std::size_t>(t0 + tt) * a.ldy + m] = acc[tt][t];
        });
    }
};

template <class Launcher>
void launch(const f16_gemm_args& a, Launcher& l) {
    if (a.rows == 0 || a.n_rows == 0)
        return;
    using K = f16_gemm_kernel;
    l.template run<K>({(a.rows + K::rows_per_block - 1) / K::rows_per_block,
                       (a.n_rows + K::tokens_per_block - 1) / K::tokens_per_block, K::threads},
                      a);
}

} // namespace bitnet::kernels::cuda
