// The KV cache's kernels on the device: the write of a step's K and V rows into the paged pool
// (kv_append), and single-token attention over the pool's block table (paged_attention).
#pragma once

#include "kernels/cuda/cpu_order_sum.hpp"
#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"
#include "kernels/f16.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace bitnet::kernels::cuda {

/// One thread per element of a row's K and V, blocks over (element chunk, row).
/// Fidelity: bit for bit (f32_to_f16 is the CPU's own constexpr conversion, round to nearest
/// even, the same code on both sides).
struct kv_append_kernel {
    using args = kv_append_args;
    static constexpr unsigned threads = 128;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned r = b.y();
        const float* k = a.k + static_cast<std::size_t>(r) * a.ld;
        const float* v = a.v + static_cast<std::size_t>(r) * a.ld;
        std::uint16_t* k_out = a.pool + a.k_dst[r];
        std::uint16_t* v_out = a.pool + a.v_dst[r];
        b.threads([&](unsigned t) {
            const unsigned i = b.x() * b.size() + t;
            if (i < a.n_kv) {
                k_out[i] = f32_to_f16(k[i]);
                v_out[i] = f32_to_f16(v[i]);
            }
        });
    }
};

/// Phase 2 of paged_attention_kernel below for positions [p_begin, p_end) of row r, head h: q
/// rounded to F16 into q16 (BITNET_SHARED, head_dim floats), then each score into s[p]. The
/// same code whether one block walks every position or the scores kernel splits them.
BITNET_DEVICE void attention_scores(const block& b, const paged_attention_args& a, unsigned h,
                                    unsigned r, unsigned p_begin, unsigned p_end, float* q16,
                                    float* s) {
    const unsigned nt = b.size();
    const unsigned hd = a.head_dim;
    const unsigned bt = a.block_tokens;
    const std::size_t row_stride = static_cast<std::size_t>(a.n_kv_head) * hd;
    const std::size_t kv_offset = static_cast<std::size_t>(h / (a.n_head / a.n_kv_head)) * hd;
    const std::uint64_t* k_tiles = a.k_tiles + a.table[r];
    const float* q = a.q + static_cast<std::size_t>(r) * a.ldq + static_cast<std::size_t>(h) * hd;
    b.threads([&](unsigned t) {
        for (unsigned d = t; d < hd; d += nt)
            q16[d] = f16_to_f32(f32_to_f16(q[d]));
    });
    b.sync();
    constexpr unsigned lanes = 16;
    const unsigned groups = nt / lanes;
    per_thread<float> dot;
    for (unsigned p0 = p_begin; p0 < p_end; p0 += groups) {
        b.threads([&](unsigned t) {
            const unsigned p = p0 + t / lanes;
            float acc = 0.0f;
            if (p < p_end) {
                const std::uint16_t* k =
                    a.pool + k_tiles[p / bt] + (p % bt) * row_stride + kv_offset;
                for (unsigned d = t % lanes; d < hd; d += lanes)
                    acc = fmaf(f16_to_f32(k[d]), q16[d], acc);
            }
            dot[t] = acc;
        });
        group_sum(b, dot, lanes);
        b.threads([&](unsigned t) {
            const unsigned p = p0 + t / lanes;
            if (t % lanes == 0 && p < p_end)
                s[p] = mul_rn(dot[t], a.scale);
        });
    }
    b.sync();
}

/// A row's context, clamped to the scratch (the engine sizes max_ctx to the longest context, so
/// the clamp never changes a valid launch).
BITNET_DEVICE unsigned attention_context(const paged_attention_args& a, unsigned r) {
    return a.n_ctx[r] < a.max_ctx ? a.n_ctx[r] : a.max_ctx;
}

/// Long contexts: the scores of every (head, row) split over blocks of split_positions positions
/// (grid.x = head + n_head · split), each one attention_scores over its range, so that one row's
/// scores are many blocks' work instead of one block's loop; paged_attention_kernel then runs
/// from phase 3. Each score is the same expression either way, so the split changes no bit.
struct attention_scores_kernel {
    using args = paged_attention_args;
    static constexpr unsigned threads = 128;
    static constexpr unsigned split_positions = 64;
    static constexpr unsigned max_head_dim = 512;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned h = b.x() % a.n_head;
        const unsigned split = b.x() / a.n_head;
        const unsigned r = b.y();
        const unsigned n = attention_context(a, r);
        const unsigned begin = split * split_positions;
        if (begin >= n)
            return;
        const unsigned end = begin + split_positions < n ? begin + split_positions : n;
        BITNET_SHARED float q16[max_head_dim];
        float* s = a.scratch + (static_cast<std::size_t>(r) * a.n_head + h) * a.max_ctx;
        attention_scores(b, a, h, r, begin, end, q16, s);
    }
};

/// One block per (query head, row), 128 threads, in the phases of kernels::attention_one_token:
///  1. q rounded to F16, into shared memory;
///  2. scores: a group of 16 threads per position, thread j of the group accumulating the
///     elements d ≡ j (mod 16) in order with FMAs (the CPU's 16 lanes), then the 16-wide
///     butterfly (offsets 8, 4, 2, 1: the CPU's fold by halves, lane 0's view), times the scale;
///  3. the maximum (order does not matter for a maximum);
///  4. expf(s - max) in float, summed in double: see below;
///  5. probabilities = e · (1/sum as float), optionally rounded to F16;
///  6. V·P: one thread per output element, one FMA per position in order from 0 (the CPU's
///     order exactly: it too keeps one accumulator per element).
/// Fidelity: the dot products and V·P are the CPU's operations in the CPU's order, so bit for
/// bit (K and the rounded q are F16, so each K·q product is exact in float anyway). The softmax
/// sum is in double in a block order, falling back to the CPU's order where the order could
/// change 1/sum as a float (cpu_order_sum.hpp). The one operation that is not the CPU's is expf: on
/// the simulated grid it is the host's glibc expf, so the whole output is bit for bit (tested); on
/// a GPU it is CUDA's expf (within 2 ulps; never build with --use_fast_math, which would make it
/// __expf, nor -ftz=true, which would flush the tiny probabilities). A probability then moves by
/// a few float ulps, and the output by far less than 2^-16 of the largest |V|; with
/// probabilities rounded to F16 a probability may land on the neighbouring half, 2^-10 of itself
/// away, so the output stays within 2^-10 of the largest |V|. Those are the tolerances a GPU run
/// is held to (tests/kernels/cuda_kv_attention_sim_test.cpp, device_tolerance); everything else
/// in this kernel is exact on the device too.
struct paged_attention_kernel {
    using args = paged_attention_args;
    static constexpr unsigned threads = 128;
    static constexpr unsigned lanes = 16;
    static constexpr unsigned max_head_dim = 512;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned h = b.x();
        const unsigned r = b.y();
        const unsigned nt = b.size();
        const unsigned hd = a.head_dim;
        const unsigned bt = a.block_tokens;
        const unsigned n = attention_context(a, r);
        const bool round_probs = a.round_probs != nullptr && a.round_probs[r] != 0;
        const std::size_t row_stride = static_cast<std::size_t>(a.n_kv_head) * hd;
        const std::size_t kv_offset = static_cast<std::size_t>(h / (a.n_head / a.n_kv_head)) * hd;
        const std::uint64_t* v_tiles = a.v_tiles + a.table[r];
        float* out = a.out + static_cast<std::size_t>(r) * a.ldo + static_cast<std::size_t>(h) * hd;
        float* s = a.scratch + (static_cast<std::size_t>(r) * a.n_head + h) * a.max_ctx;

        BITNET_SHARED float q16[max_head_dim];
        BITNET_SHARED float warp_max_of[max_threads / warp_size];
        BITNET_SHARED double warp_sum_of[max_threads / warp_size];
        BITNET_SHARED float inv_shared;
        const unsigned n_warps = nt / warp_size;

        if (a.score_splits == 0)
            attention_scores(b, a, h, r, 0, n, q16, s);

        per_thread<float> mx;
        b.threads([&](unsigned t) {
            float m = -INFINITY;
            for (unsigned p = t; p < n; p += nt)
                m = s[p] > m ? s[p] : m;
            mx[t] = m;
        });
        warp_max(b, mx);
        store_warp_results(b, mx, warp_max_of);

        per_thread<double> part;
        b.threads([&](unsigned t) {
            float m = warp_max_of[0];
            for (unsigned w = 1; w < n_warps; ++w)
                m = warp_max_of[w] > m ? warp_max_of[w] : m;
            double sum = 0.0;
            for (unsigned p = t; p < n; p += nt) {
                const float e = expf(sub_rn(s[p], m));
                s[p] = e;
                sum += static_cast<double>(e);
            }
            part[t] = sum;
        });
        finish_sum_as_cpu(
            b, part, warp_sum_of, inv_shared, n, 1.0, [](double sum) { return 1.0 / sum; },
            [&] {
                double sum = 0.0;
                for (unsigned p = 0; p < n; ++p)
                    sum += static_cast<double>(s[p]);
                return sum;
            });

        b.threads([&](unsigned t) {
            const float inv = inv_shared;
            for (unsigned p = t; p < n; p += nt) {
                const float pr = mul_rn(s[p], inv);
                s[p] = round_probs ? f16_to_f32(f32_to_f16(pr)) : pr;
            }
        });
        b.sync();

        b.threads([&](unsigned t) {
            for (unsigned d = t; d < hd; d += nt) {
                float acc = 0.0f;
                for (unsigned p = 0; p < n; ++p) {
                    const std::uint16_t v =
                        a.pool[v_tiles[p / bt] + (p % bt) * row_stride + kv_offset + d];
                    acc = fmaf(f16_to_f32(v), s[p], acc);
                }
                out[d] = acc;
            }
        });
    }
};

template <class Launcher>
void launch(const kv_append_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n_kv == 0)
        return; // a launch of zero blocks is an error on the device
    if (a.n_rows > 65535u)
        throw std::invalid_argument("kv_append: more than 65535 rows in one launch");
    const unsigned blocks = (a.n_kv + kv_append_kernel::threads - 1) / kv_append_kernel::threads;
    l.template run<kv_append_kernel>(launch_shape{blocks, a.n_rows, kv_append_kernel::threads}, a);
}

template <class Launcher>
void launch(const paged_attention_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n_head == 0)
        return;
    if (a.head_dim == 0 || a.head_dim > paged_attention_kernel::max_head_dim)
        throw std::invalid_argument("paged_attention: head_dim must be in [1, 512]");
    if (a.n_kv_head == 0 || a.n_head % a.n_kv_head != 0)
        throw std::invalid_argument("paged_attention: n_head must be a multiple of n_kv_head");
    if (a.block_tokens == 0)
        throw std::invalid_argument("paged_attention: block_tokens must be positive");
    if (a.n_rows > 65535u)
        throw std::invalid_argument("paged_attention: more than 65535 rows in one launch");
    paged_attention_args p = a;
    p.score_splits = 0;
    using scores = attention_scores_kernel;
    if (a.max_ctx > 2 * scores::split_positions) {
        p.score_splits = (a.max_ctx + scores::split_positions - 1) / scores::split_positions;
        if (std::uint64_t{p.score_splits} * a.n_head > 0x7fffffffu)
            throw std::invalid_argument("paged_attention: too many heads × positions");
        l.template run<scores>(launch_shape{a.n_head * p.score_splits, a.n_rows, scores::threads},
                               p);
    }
    l.template run<paged_attention_kernel>(
        launch_shape{a.n_head, a.n_rows, paged_attention_kernel::threads}, p);
}

} // namespace bitnet::kernels::cuda
