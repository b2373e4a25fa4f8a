// The F16 product of the tied logits on the device: kernels::f16_matmul's defined order, bit for
// bit. f16_matmul's 16 lanes (lane l accumulates the columns k ≡ l (mod 16) in increasing k with
// one fused multiply-add each, then lane i += lane i + w for w = 8, 4, 2, 1) are split over two
// threads per (row, token): thread h holds lanes 8h .. 8h+7, whose columns in each 16-column step
// are 8 consecutive halves, one 16-byte load. The first fold (w = 8) is a shuffle between the two
// threads (both end with lane i + lane i+8: the same two operands, and float addition is
// commutative); the rest (4, 2, 1) is the CPU's fold in thread 0's registers.
// Why this shape: the logits weight is the largest tensor of the model (vocab × hidden F16, 656 MB
// for 2B-4T, more bytes than all ternary projections together), so this GEMV is the decode
// token's biggest read; 16-byte loads with a thread pair reading 32 contiguous bytes keep many
// bytes in flight per instruction, where one half per lane would not.
// Not cuBLAS GemmEx, which the issue allows: cuBLAS's summation order is its own and undocumented,
// so its logits could not be checked against the CPU's here, where there is no GPU; this kernel
// runs, the same source, on the simulated grid in every test.
// A block is 128 weight rows × 4 tokens. The tokens' activations, rounded to F16 once per block
// with the CPU's own f32_to_f16, are staged in shared memory 512 columns at a time.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"
#include "kernels/f16.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#else
#include <cmath>
#endif

// Loops over per_thread arrays must be unrolled on the device, or the arrays leave registers.
#if defined(__CUDACC__)
#define BITNET_UNROLL _Pragma("unroll")
#else
#define BITNET_UNROLL
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

/// 8 consecutive F16 weights (16 bytes; device: one load when `aligned`).
struct f16x8 {
    std::uint16_t h[8];
};
BITNET_DEVICE f16x8 load_f16x8(const std::uint16_t* p) {
#if defined(__CUDACC__)
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    f16x8 r;
    const std::uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (unsigned i = 0; i < 4; ++i) {
        r.h[2 * i] = static_cast<std::uint16_t>(u[i] & 0xffffu);
        r.h[2 * i + 1] = static_cast<std::uint16_t>(u[i] >> 16);
    }
    return r;
#else
    f16x8 r;
    std::memcpy(r.h, p, sizeof r.h);
    return r;
#endif
}

struct f16_gemm_kernel {
    using args = f16_gemm_args;
    static constexpr unsigned threads = 256;
    static constexpr unsigned lanes = 16;           ///< kernels::f16_dot_lanes
    static constexpr unsigned lanes_per_thread = 8; ///< one 16-byte load per step
    static constexpr unsigned threads_per_row = lanes / lanes_per_thread;
    static constexpr unsigned rows_per_block = threads / threads_per_row; // 128
    static constexpr unsigned tokens_per_block = 4;
    static constexpr unsigned chunk = 512; ///< columns staged at once, a multiple of lanes

    static BITNET_DEVICE void body(const block& b, const args& a) {
        BITNET_SHARED float x_s[tokens_per_block][chunk];
        const std::uint32_t t0 = b.y() * tokens_per_block;
        const std::uint32_t n_tok =
            a.n_rows - t0 < tokens_per_block ? a.n_rows - t0 : tokens_per_block;
        const std::uint32_t first_row = b.x() * rows_per_block;
        // Whole 16-byte loads need every row to start 16-byte aligned: cols a multiple of 8.
        const bool vector_loads = a.cols % lanes_per_thread == 0;
        per_thread<float> acc[tokens_per_block][lanes_per_thread];
        b.threads([&](unsigned t) {
            BITNET_UNROLL
            for (unsigned tt = 0; tt < tokens_per_block; ++tt)
                BITNET_UNROLL
            for (unsigned i = 0; i < lanes_per_thread; ++i)
                acc[tt][i][t] = 0.0f;
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
                const std::uint32_t m = first_row + t / threads_per_row;
                if (m >= a.rows)
                    return;
                const std::uint16_t* wr = a.w + static_cast<std::size_t>(m) * a.cols + k0;
                // k0 is a multiple of 16: column k0 + j0 + 8h + i is lane 8h + i.
                const unsigned first = (t % threads_per_row) * lanes_per_thread;
                for (unsigned j0 = 0; j0 < kc; j0 += lanes) {
                    const unsigned base = j0 + first;
                    if (vector_loads && base + lanes_per_thread <= kc) {
                        const f16x8 w = load_f16x8(wr + base);
                        BITNET_UNROLL
                        for (unsigned i = 0; i < lanes_per_thread; ++i) {
                            const float wf = widen_f16(w.h[i]);
                            BITNET_UNROLL
                            for (unsigned tt = 0; tt < tokens_per_block; ++tt)
                                acc[tt][i][t] =
                                    fused_multiply_add(wf, x_s[tt][base + i], acc[tt][i][t]);
                        }
                    } else {
                        // The ragged end (or rows not 16-byte aligned): columns past kc are
                        // skipped, not multiplied by zero (an inf weight would make a NaN, and
                        // -0 + 0 is +0).
                        BITNET_UNROLL
                        for (unsigned i = 0; i < lanes_per_thread; ++i) {
                            if (base + i >= kc)
                                break;
                            const float wf = widen_f16(wr[base + i]);
                            BITNET_UNROLL
                            for (unsigned tt = 0; tt < tokens_per_block; ++tt)
                                acc[tt][i][t] =
                                    fused_multiply_add(wf, x_s[tt][base + i], acc[tt][i][t]);
                        }
                    }
                }
            });
            b.sync();
        }
        // Fold w = 8: lane i + lane i+8, across the thread pair.
        BITNET_UNROLL
        for (unsigned tt = 0; tt < tokens_per_block; ++tt)
            BITNET_UNROLL
        for (unsigned i = 0; i < lanes_per_thread; ++i)
            group_sum(b, acc[tt][i], threads_per_row);
        b.threads([&](unsigned t) {
            const std::uint32_t m = first_row + t / threads_per_row;
            if (t % threads_per_row != 0 || m >= a.rows)
                return;
            BITNET_UNROLL
            for (unsigned tt = 0; tt < tokens_per_block; ++tt) {
                if (tt >= n_tok)
                    break;
                float v[lanes_per_thread];
                BITNET_UNROLL
                for (unsigned i = 0; i < lanes_per_thread; ++i)
                    v[i] = acc[tt][i][t];
                // Folds w = 4, 2, 1, as f16_matmul.
                BITNET_UNROLL
                for (unsigned w = lanes_per_thread / 2; w > 0; w /= 2)
                    BITNET_UNROLL
                for (unsigned i = 0; i < w; ++i)
                    v[i] = add_rn(v[i], v[i + w]);
                a.y[static_cast<std::size_t>(t0 + tt) * a.ldy + m] = v[0];
            }
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
