// The ternary product on the device (kernels::ternary_matmul's scalar family, then
// cpu_engine::bitlinear's out_multiplier), over the GPU layout of ternary_gpu_layout.hpp.
// Two variants, chosen in launch():
//   - ternary_gemv_kernel (T ≤ 4 tokens, decode): one warp per weight row; lane l reads words
//     l, l+32, ... of the row (one 128-byte transaction per warp step) and the 16 matching int8
//     activations of each token (one 128-bit load, from L1/L2: every warp of the block reads the
//     same ones), 4 dp4a per word per token; the warp's partial sums meet in a shuffle butterfly.
//     Weights are read exactly once per launch, 2 bits each: the bytes a decode token moves.
//   - ternary_gemm_tiled_kernel (T > 4: batched decode, prefill): a block computes 64 rows × 16
//     tokens; per 128-column chunk it stages the 64 rows' 8 weight words and the 16 tokens' 128
//     activations in shared memory, then each thread decodes one row's words once and uses each
//     decoded group for 4 tokens.
// Exactness: both compute Σ_k w·q with w ∈ {-1, 0, +1} in int32, which is exactly the CPU's
// Σ code·q − Σ q (integer sums do not depend on the order), and then the CPU's float steps in its
// order: float(dot) / act_scale · w_scale, then · out_multiplier when it is not 1 (two separate
// roundings: there is no add for nvcc to contract into an FMA, and IEEE division is nvcc's
// default without --use_fast_math). So y equals the CPU's bit for bit.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/ternary_gpu_layout.hpp"

namespace bitnet::kernels::cuda {

/// 16 int8 activations as the 4 int32 a dp4a takes (16-byte aligned: ldq and the base are
/// multiples of 16).
struct int8x16 {
    std::int32_t v[4];
};
BITNET_DEVICE int8x16 load_int8x16(const std::int8_t* p) {
#if defined(__CUDACC__)
    const int4 w = *reinterpret_cast<const int4*>(p);
    return {{w.x, w.y, w.z, w.w}};
#else
    int8x16 r;
    std::memcpy(r.v, p, sizeof r.v);
    return r;
#endif
}
BITNET_DEVICE std::int32_t load_int8x4(const std::int8_t* p) {
#if defined(__CUDACC__)
    return *reinterpret_cast<const int*>(p);
#else
    std::int32_t r;
    std::memcpy(&r, p, sizeof r);
    return r;
#endif
}
/// Word j of the layout (host: through memcpy, the bytes may come from any buffer).
BITNET_DEVICE std::uint32_t load_weight_word(const std::uint8_t* w, std::size_t j) {
#if defined(__CUDACC__)
    return reinterpret_cast<const std::uint32_t*>(w)[j];
#else
    std::uint32_t r;
    std::memcpy(&r, w + 4 * j, sizeof r);
    return r;
#endif
}

/// The CPU's float steps after the exact integer sum (ternary_rows_scalar, then bitlinear).
BITNET_DEVICE float ternary_output(std::int32_t dot, float act_scale, const ternary_gemm_args& a) {
    float y = static_cast<float>(dot) / act_scale * a.w_scale;
    if (a.out_multiplier != 1.0f)
        y *= a.out_multiplier;
    return y;
}

struct ternary_gemv_kernel {
    using args = ternary_gemm_args;
    static constexpr unsigned threads = 256; ///< 8 warps, 8 rows per block
    static constexpr unsigned max_tokens = 4;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const std::uint32_t words = a.cols / ternary_gpu_word_cols;
        const std::uint32_t n_tok = a.n_rows < max_tokens ? a.n_rows : max_tokens;
        const std::uint32_t first_row = b.x() * (b.size() / warp_size);
        per_thread<std::int32_t> acc[max_tokens];
        b.threads([&](unsigned t) {
            for (unsigned tt = 0; tt < max_tokens; ++tt)
                acc[tt][t] = 0;
            const std::uint32_t m = first_row + t / warp_size;
            if (m >= a.rows)
                return;
            const std::uint8_t* row = a.w + static_cast<std::size_t>(m) * words * 4;
            for (std::uint32_t j = t % warp_size; j < words; j += warp_size) {
                const std::uint32_t word = load_weight_word(row, j);
                const std::int32_t w0 = decode_group(word, 0);
                const std::int32_t w1 = decode_group(word, 1);
                const std::int32_t w2 = decode_group(word, 2);
                const std::int32_t w3 = decode_group(word, 3);
#if defined(__CUDACC__)
#pragma unroll
#endif
                for (unsigned tt = 0; tt < max_tokens; ++tt) {
                    if (tt >= n_tok)
                        break;
                    const int8x16 q = load_int8x16(a.q + static_cast<std::size_t>(tt) * a.ldq +
                                                   std::size_t{16} * j);
                    std::int32_t s = acc[tt][t];
                    s = dp4a(w0, q.v[0], s);
                    s = dp4a(w1, q.v[1], s);
                    s = dp4a(w2, q.v[2], s);
                    s = dp4a(w3, q.v[3], s);
                    acc[tt][t] = s;
                }
            }
        });
        for (unsigned tt = 0; tt < max_tokens; ++tt)
            warp_sum(b, acc[tt]);
        b.threads([&](unsigned t) {
            const std::uint32_t m = first_row + t / warp_size;
            if (t % warp_size != 0 || m >= a.rows)
                return;
            for (unsigned tt = 0; tt < n_tok; ++tt)
                a.y[static_cast<std::size_t>(tt) * a.ldy + m] =
                    ternary_output(acc[tt][t], a.act_scale[tt], a);
        });
    }
};

struct ternary_gemm_tiled_kernel {
    using args = ternary_gemm_args;
    static constexpr unsigned threads = 256;
    static constexpr unsigned tile_rows = 64;
    static constexpr unsigned tile_tokens = 16;
    static constexpr unsigned tokens_per_thread = tile_tokens / (threads / tile_rows); // 4
    static constexpr unsigned chunk_words = 8;                 // 128 columns
    static constexpr unsigned chunk_q_words = chunk_words * 4; // 128 int8 as int32
    static constexpr unsigned padded_words = chunk_words + 1;  // odd stride: no bank conflicts

    static BITNET_DEVICE void body(const block& b, const args& a) {
        BITNET_SHARED std::uint32_t w_s[tile_rows][padded_words];
        BITNET_SHARED std::int32_t q_s[tile_tokens][chunk_q_words];
        const std::uint32_t words = a.cols / ternary_gpu_word_cols;
        const std::uint32_t m0 = b.x() * tile_rows;
        const std::uint32_t t0 = b.y() * tile_tokens;
        per_thread<std::int32_t> acc[tokens_per_thread];
        b.threads([&](unsigned t) {
            for (unsigned tt = 0; tt < tokens_per_thread; ++tt)
                acc[tt][t] = 0;
        });
        for (std::uint32_t c = 0; c < words; c += chunk_words) {
            b.threads([&](unsigned t) {
                for (unsigned i = t; i < tile_rows * chunk_words; i += b.size()) {
                    const std::uint32_t m = m0 + i / chunk_words;
                    w_s[i / chunk_words][i % chunk_words] =
                        m < a.rows ? load_weight_word(a.w, static_cast<std::size_t>(m) * words + c +
                                                               i % chunk_words)
                                   : 0u;
                }
                for (unsigned i = t; i < tile_tokens * chunk_q_words; i += b.size()) {
                    const std::uint32_t tok = t0 + i / chunk_q_words;
                    q_s[i / chunk_q_words][i % chunk_q_words] =
                        tok < a.n_rows ? load_int8x4(a.q + static_cast<std::size_t>(tok) * a.ldq +
                                                     std::size_t{16} * c + 4 * (i % chunk_q_words))
                                       : 0;
                }
            });
            b.sync();
            b.threads([&](unsigned t) {
                const unsigned r = t % tile_rows;
                const unsigned first_tok = (t / tile_rows) * tokens_per_thread;
                for (unsigned j = 0; j < chunk_words; ++j) {
                    const std::uint32_t word = w_s[r][j];
                    for (unsigned g = 0; g < 4; ++g) {
                        const std::int32_t wg = decode_group(word, g);
                        for (unsigned tt = 0; tt < tokens_per_thread; ++tt)
                            acc[tt][t] = dp4a(wg, q_s[first_tok + tt][4 * j + g], acc[tt][t]);
                    }
                }
            });
            b.sync();
        }
        b.threads([&](unsigned t) {
            const std::uint32_t m = m0 + t % tile_rows;
            if (m >= a.rows)
                return;
            for (unsigned tt = 0; tt < tokens_per_thread; ++tt) {
                const std::uint32_t tok = t0 + (t / tile_rows) * tokens_per_thread + tt;
                if (tok < a.n_rows)
                    a.y[static_cast<std::size_t>(tok) * a.ldy + m] =
                        ternary_output(acc[tt][t], a.act_scale[tok], a);
            }
        });
    }
};

template <class Launcher>
void launch(const ternary_gemm_args& a, Launcher& l) {
    if (a.rows == 0 || a.n_rows == 0)
        return;
    if (a.n_rows <= ternary_gemv_kernel::max_tokens) {
        const unsigned rows_per_block = ternary_gemv_kernel::threads / warp_size;
        l.template run<ternary_gemv_kernel>(
            {(a.rows + rows_per_block - 1) / rows_per_block, 1, ternary_gemv_kernel::threads}, a);
        return;
    }
    using tiled = ternary_gemm_tiled_kernel;
    l.template run<tiled>({(a.rows + tiled::tile_rows - 1) / tiled::tile_rows,
                           (a.n_rows + tiled::tile_tokens - 1) / tiled::tile_tokens,
                           tiled::threads},
                          a);
}

} // namespace bitnet::kernels::cuda
