// The ternary product on the device (kernels::ternary_matmul's scalar family, then
// cpu_engine::bitlinear's out_multiplier), over the GPU layout of ternary_gpu_layout.hpp.
// Two variants, chosen in launch():
//   - ternary_gemv_kernel (T ≤ 8 tokens, decode): one warp per weight row; lane l reads 16-byte
//     quads l, l+32, ... of the row (4 words = 64 columns per 128-bit load, so a warp step is one
//     512-byte contiguous read and each lane keeps 16 bytes in flight per load, which a memory-
//     bound kernel needs more than instructions) and the 64 matching int8 activations of each
//     token (from L1/L2: every warp of the block reads the same ones), 16 dp4a per quad per
//     token; the warp's partial sums meet in a shuffle butterfly. Weights are read exactly once
//     per launch, 2 bits each: the bytes a decode token moves.
//   - ternary_gemm_tiled_kernel (T > 8: batched decode, prefill): a block computes 64 rows × 16
//     tokens; per 128-column chunk it stages the 64 rows' 8 weight words and the 16 tokens' 128
//     activations in shared memory, then each thread decodes one row's words once and uses each
//     decoded group for 4 tokens. Split-K: when the tiles alone are fewer than fill_blocks (a
//     2-64 token batch: 40 tiles of a 2560-row projection at 16 tokens, for 132 SMs), each tile's
//     K is split over several blocks (at least 2 chunks each), which add their exact int32 sums
//     into a workspace with integer atomics; the tile's last block to finish (a counter) turns
//     the sums into the outputs and leaves the workspace zeroed for the next launch (and the next
//     replay of a recorded plan). Integer sums do not depend on the order the blocks meet in, so
//     a split product is the unsplit one bit for bit.
// Exactness: both compute Σ_k w·q with w ∈ {-1, 0, +1} in int32, which is exactly the CPU's
// Σ code·q − Σ q (integer sums do not depend on the order), and then the CPU's float steps in its
// order: float(dot) / act_scale · w_scale, then · out_multiplier when it is not 1 (two separate
// roundings: there is no add for nvcc to contract into an FMA, and IEEE division is nvcc's
// default without --use_fast_math). So y equals the CPU's bit for bit.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"
#include "kernels/cuda/ternary_gpu_layout.hpp"

#include <stdexcept>
#include <string>

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

/// Words 4u .. 4u+3 of a row of the layout: one 128-bit load (rows are cols / 4 bytes, a multiple
/// of 32, and device allocations are 256-byte aligned).
struct weight_quad {
    std::uint32_t w[4];
};
BITNET_DEVICE weight_quad load_weight_quad(const std::uint8_t* row, std::size_t u) {
#if defined(__CUDACC__)
    const uint4 v = reinterpret_cast<const uint4*>(row)[u];
    return {{v.x, v.y, v.z, v.w}};
#else
    weight_quad r;
    std::memcpy(r.w, row + 16 * u, sizeof r.w);
    return r;
#endif
}

/// The CPU's float steps after the exact integer sum (ternary_rows_scalar, then bitlinear), each
/// rounded once: on the device through the _rn intrinsics, which no flag (--use_fast_math,
/// -prec-div=false) turns into an approximate division or a fused product.
BITNET_DEVICE float ternary_output(std::int32_t dot, float act_scale, float w_scale,
                                   float out_multiplier) {
#if defined(__CUDA_ARCH__)
    float y = __fmul_rn(__fdiv_rn(static_cast<float>(dot), act_scale), w_scale);
    if (out_multiplier != 1.0f)
        y = __fmul_rn(y, out_multiplier);
#else
    float y = static_cast<float>(dot) / act_scale * w_scale;
    if (out_multiplier != 1.0f)
        y *= out_multiplier;
#endif
    return y;
}

/// Output m of token tok: its segment's scale and multiplier, then stored or added to y (the
/// residual add as one rounded float addition, as the separate add kernel makes it).
BITNET_DEVICE void store_ternary_output(const ternary_gemm_args& a, std::uint32_t tok,
                                        std::uint32_t m, std::int32_t dot) {
    float w_scale = a.w_scale;
    float mult = a.out_multiplier;
    for (unsigned i = 0; i < 2; ++i)
        if (a.seg_begin[i] != 0 && m >= a.seg_begin[i]) {
            w_scale = a.seg_scale[i];
            mult = a.seg_mult[i];
        }
    const float v = ternary_output(dot, a.act_scale[tok], w_scale, mult);
    float& y = a.y[static_cast<std::size_t>(tok) * a.ldy + m];
    y = a.accumulate ? add_rn(y, v) : v;
}

struct ternary_gemv_kernel {
    using args = ternary_gemm_args;
    static constexpr unsigned threads = 256; ///< 8 warps, 8 rows per block
    static constexpr unsigned max_tokens = 8;
    static constexpr unsigned quad_words = 4; ///< 64 columns, one 128-bit load per lane

    static BITNET_DEVICE void body(const block& b, const args& a) {
        // K is a multiple of 128, so a row is a whole number of 16-byte quads.
        const std::uint32_t quads = a.cols / (ternary_gpu_word_cols * quad_words);
        const std::uint32_t n_tok = a.n_rows < max_tokens ? a.n_rows : max_tokens;
        const std::uint32_t first_row = b.x() * (b.size() / warp_size);
        per_thread<std::int32_t> acc[max_tokens];
        b.threads([&](unsigned t) {
            for (unsigned tt = 0; tt < max_tokens; ++tt)
                acc[tt][t] = 0;
            const std::uint32_t m = first_row + t / warp_size;
            if (m >= a.rows)
                return;
            const std::uint8_t* row = a.w + static_cast<std::size_t>(m) * a.cols / 4;
            for (std::uint32_t u = t % warp_size; u < quads; u += warp_size) {
                const weight_quad wq = load_weight_quad(row, u);
#if defined(__CUDACC__)
#pragma unroll
#endif
                for (unsigned i = 0; i < quad_words; ++i) {
                    const std::uint32_t word = wq.w[i];
                    const std::int32_t w0 = decode_group(word, 0);
                    const std::int32_t w1 = decode_group(word, 1);
                    const std::int32_t w2 = decode_group(word, 2);
                    const std::int32_t w3 = decode_group(word, 3);
                    // Word 4u + i covers columns 16 (4u + i) .. + 15.
                    const std::size_t col =
                        std::size_t{ternary_gpu_word_cols} * (quad_words * u + i);
#if defined(__CUDACC__)
#pragma unroll
#endif
                    for (unsigned tt = 0; tt < max_tokens; ++tt) {
                        if (tt >= n_tok)
                            break;
                        const int8x16 q =
                            load_int8x16(a.q + static_cast<std::size_t>(tt) * a.ldq + col);
                        std::int32_t sum = acc[tt][t];
                        sum = dp4a(w0, q.v[0], sum);
                        sum = dp4a(w1, q.v[1], sum);
                        sum = dp4a(w2, q.v[2], sum);
                        sum = dp4a(w3, q.v[3], sum);
                        acc[tt][t] = sum;
                    }
                }
            }
        });
        // n_tok is the same for every thread: the butterflies of unused tokens are skipped.
#if defined(__CUDACC__)
#pragma unroll
#endif
        for (unsigned tt = 0; tt < max_tokens; ++tt)
            if (tt < n_tok)
                warp_sum(b, acc[tt]);
        b.threads([&](unsigned t) {
            const std::uint32_t m = first_row + t / warp_size;
            if (t % warp_size != 0 || m >= a.rows)
                return;
            for (unsigned tt = 0; tt < n_tok; ++tt)
                store_ternary_output(a, tt, m, acc[tt][t]);
        });
    }
};

struct ternary_gemm_tiled_kernel {
    using args = ternary_gemm_args;
    static constexpr unsigned threads = 256;
    static constexpr unsigned tile_rows = 64;
    static constexpr unsigned tile_tokens = 16;
    static constexpr unsigned tile_outputs = tile_rows * tile_tokens;
    static constexpr unsigned tokens_per_thread = tile_tokens / (threads / tile_rows); // 4
    static constexpr unsigned chunk_words = 8;                 // 128 columns
    static constexpr unsigned chunk_q_words = chunk_words * 4; // 128 int8 as int32
    static constexpr unsigned padded_words = chunk_words + 1;  // odd stride: no bank conflicts
    /// Blocks that keep the largest current GPUs busy (132 SMs, several blocks each).
    static constexpr unsigned fill_blocks = 528;
    /// The fewest 128-column chunks a split walks (its atomics are worth it only then).
    static constexpr unsigned min_split_chunks = 2;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        BITNET_SHARED std::uint32_t w_s[tile_rows][padded_words];
        BITNET_SHARED std::int32_t q_s[tile_tokens][chunk_q_words];
        const std::uint32_t words = a.cols / ternary_gpu_word_cols;
        const std::uint32_t chunks = words / chunk_words;
        const std::uint32_t split = b.x() % a.splits;
        const std::uint32_t row_tile = b.x() / a.splits;
        const std::uint32_t m0 = row_tile * tile_rows;
        const std::uint32_t t0 = b.y() * tile_tokens;
        // This block's chunks: an even share, the remainder spread over the first splits.
        const std::uint32_t c_begin = split * chunks / a.splits;
        const std::uint32_t c_end = (split + 1) * chunks / a.splits;
        per_thread<std::int32_t> acc[tokens_per_thread];
        b.threads([&](unsigned t) {
            for (unsigned tt = 0; tt < tokens_per_thread; ++tt)
                acc[tt][t] = 0;
        });
        for (std::uint32_t c = c_begin * chunk_words; c < c_end * chunk_words; c += chunk_words) {
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
        // Output (t % 64, token t / 64 · 4 + tt) of the tile, for the thread that holds it.
        auto each_output = [&](unsigned t, auto&& f) {
            const std::uint32_t m = m0 + t % tile_rows;
            for (unsigned tt = 0; tt < tokens_per_thread; ++tt) {
                const unsigned local_tok = (t / tile_rows) * tokens_per_thread + tt;
                f(m, t0 + local_tok, local_tok * tile_rows + t % tile_rows, tt);
            }
        };
        if (a.splits == 1) {
            b.threads([&](unsigned t) {
                each_output(t, [&](std::uint32_t m, std::uint32_t tok, unsigned, unsigned tt) {
                    if (m < a.rows && tok < a.n_rows)
                        store_ternary_output(a, tok, m, acc[tt][t]);
                });
            });
            return;
        }
        meet_split(b, a, acc, row_tile, each_output);
    }

    /// Split-K's end: the block adds its sums into the tile's workspace; the tile's last block to
    /// arrive turns them into the outputs and leaves the workspace zeroed.
    template <class EachOutput>
    static BITNET_DEVICE void meet_split(const block& b, const args& a,
                                         per_thread<std::int32_t> (&acc)[tokens_per_thread],
                                         std::uint32_t row_tile, EachOutput each_output) {
#if defined(__CUDACC__)
        __shared__ bool last_block;
#else
        bool last_block = false; // (g++ cannot see that thread 0's phase always writes it)
#endif
        const std::uint32_t tile = b.y() * row_tiles(a.rows) + row_tile;
        std::int32_t* sums = a.split_sums + static_cast<std::size_t>(tile) * tile_outputs;
        b.threads([&](unsigned t) {
            each_output(t, [&](std::uint32_t, std::uint32_t, unsigned i, unsigned tt) {
                atomic_add(sums + i, acc[tt][t]);
            });
            thread_fence(); // the sums before the count that says they are in
        });
        b.sync();
        b.threads([&](unsigned t) {
            if (t == 0)
                last_block = atomic_increment(a.split_counters + tile) == a.splits - 1;
        });
        b.sync();
        if (!last_block)
            return;
        b.threads([&](unsigned t) {
            each_output(t, [&](std::uint32_t m, std::uint32_t tok, unsigned i, unsigned) {
                const std::int32_t dot = atomic_exchange(sums + i, 0); // read, and zero for next
                if (m < a.rows && tok < a.n_rows)
                    store_ternary_output(a, tok, m, dot);
            });
            if (t == 0)
                atomic_reset(a.split_counters + tile);
        });
    }

    /// Row tiles of a product of `rows` rows (host and device: launch() and the body agree).
    static BITNET_HOST_DEVICE std::uint32_t row_tiles(std::uint32_t rows) {
        return (rows + tile_rows - 1) / tile_rows;
    }
};

/// How many ways launch() splits K for a tiled product of this shape (1: no split).
inline std::uint32_t ternary_splits_for(std::uint32_t rows, std::uint32_t cols,
                                        std::uint32_t n_rows) {
    using tiled = ternary_gemm_tiled_kernel;
    if (n_rows <= ternary_gemv_kernel::max_tokens)
        return 1;
    const std::uint32_t tiles =
        tiled::row_tiles(rows) * ((n_rows + tiled::tile_tokens - 1) / tiled::tile_tokens);
    const std::uint32_t chunks = cols / (ternary_gpu_word_cols * tiled::chunk_words);
    if (tiles >= tiled::fill_blocks)
        return 1;
    std::uint32_t s = (tiled::fill_blocks + tiles - 1) / tiles;
    const std::uint32_t most = chunks / tiled::min_split_chunks;
    s = s < most ? s : most;
    return s < 1 ? 1 : s;
}

/// The workspace a split product of this shape needs: tiles (counters) and int32 sums.
struct ternary_split_workspace {
    std::uint32_t tiles = 0;
    std::uint64_t sums = 0;
};
inline ternary_split_workspace ternary_split_workspace_for(std::uint32_t rows,
                                                           std::uint32_t n_rows) {
    using tiled = ternary_gemm_tiled_kernel;
    const std::uint32_t tiles =
        tiled::row_tiles(rows) * ((n_rows + tiled::tile_tokens - 1) / tiled::tile_tokens);
    return {tiles, std::uint64_t{tiles} * tiled::tile_outputs};
}

template <class Launcher>
void launch(const ternary_gemm_args& a, Launcher& l) {
    if (a.rows == 0 || a.n_rows == 0)
        return;
    // The layout's words and the 128-bit activation loads need these; a wrong call is an error
    // here, on the host, rather than a misaligned access on the device.
    if (a.cols % 128 != 0 || a.ldq % 16 != 0)
        throw std::invalid_argument("ternary_gemm: cols (" + std::to_string(a.cols) +
                                    ") must be a multiple of 128 and ldq (" +
                                    std::to_string(a.ldq) + ") of 16");
    if (a.n_rows <= ternary_gemv_kernel::max_tokens) {
        const unsigned rows_per_block = ternary_gemv_kernel::threads / warp_size;
        l.template run<ternary_gemv_kernel>(
            {(a.rows + rows_per_block - 1) / rows_per_block, 1, ternary_gemv_kernel::threads}, a);
        return;
    }
    using tiled = ternary_gemm_tiled_kernel;
    ternary_gemm_args s = a;
    s.splits = ternary_splits_for(a.rows, a.cols, a.n_rows);
    const ternary_split_workspace ws = ternary_split_workspace_for(a.rows, a.n_rows);
    if (s.split_sums == nullptr || s.split_counters == nullptr || ws.tiles > s.split_tiles)
        s.splits = 1; // no room to meet in: one block walks all of K
    const std::uint32_t token_tiles = (a.n_rows + tiled::tile_tokens - 1) / tiled::tile_tokens;
    if (token_tiles > 65535u)
        throw std::invalid_argument("ternary_gemm: more than 65535 token tiles in one launch");
    l.template run<tiled>({tiled::row_tiles(a.rows) * s.splits, token_tiles, tiled::threads}, s);
}

} // namespace bitnet::kernels::cuda
