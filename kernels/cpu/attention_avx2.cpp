// AVX2 attention building blocks; order as defined in attention_kernels.hpp (the 16 lanes are
// two 8-lane registers). As in the AVX-512 family, the query heads of one KV head go together,
// up to four at a time, each with its own accumulators.
#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

const std::uint16_t* row_of(const std::uint16_t* const* blocks, const attention_head_args& a,
                            std::uint32_t p) {
    return blocks[p / a.block_tokens] + (p % a.block_tokens) * a.row_stride + a.kv_offset;
}

/// Values [8c, 8c + 8) of an F16 row.
struct f16_row {
    /// Where chunks c and c + 1 start (what a pass of values_tile reads of the row).
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + 8 * c;
    }
    static constexpr std::size_t pass_bytes = 32;
    static __m256 chunk(const std::uint16_t* row, std::uint32_t c) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8 * c)));
    }
};

/// Values [8c, 8c + 8) of a Q8_0 row: a quarter of block c / 4, times its scale (exact).
struct q8_row {
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + (c / 4) * q8_block_halves;
    }
    static constexpr std::size_t pass_bytes = q8_block_halves * 2;
    static __m256 chunk(const std::uint16_t* row, std::uint32_t c) {
        const std::uint16_t* block = row + (c / 4) * q8_block_halves;
        const __m256 d = _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 1) + (c % 4) * 8;
        const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw)), d);
    }
};

template <class Row, std::uint32_t N>
void scores_tile(const attention_head_args& a, std::uint32_t g0, float* scores) {
    const std::size_t row_bytes = a.head_halves * 2;
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        if (p + kv_prefetch_ahead < a.n_ctx)
            prefetch_bytes(row_of(a.k_blocks, a, p + kv_prefetch_ahead), row_bytes);
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m256 lo[N], hi[N]; // lanes 0..7 and 8..15 of each head
        for (std::uint32_t j = 0; j < N; ++j)
            lo[j] = hi[j] = _mm256_setzero_ps();
        for (std::uint32_t d = 0; d < a.head_dim; d += 16) {
            const __m256 k_lo = Row::chunk(k, d / 8);
            const __m256 k_hi = Row::chunk(k, d / 8 + 1);
            for (std::uint32_t j = 0; j < N; ++j) {
                const float* q = a.q16 + std::size_t{g0 + j} * a.head_dim + d;
                lo[j] = _mm256_fmadd_ps(k_lo, _mm256_loadu_ps(q), lo[j]);
                hi[j] = _mm256_fmadd_ps(k_hi, _mm256_loadu_ps(q + 8), hi[j]);
            }
        }
        for (std::uint32_t j = 0; j < N; ++j) {
            const __m256 h = _mm256_add_ps(lo[j], hi[j]);
            __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
            q = _mm_add_ps(q, _mm_movehl_ps(q, q));
            q = _mm_add_ss(q, _mm_movehdup_ps(q));
            scores[std::size_t{g0 + j} * a.n_ctx + p] = _mm_cvtss_f32(q) * a.scale;
        }
    }
}

template <class Row, std::uint32_t N>
void values_tile(const attention_head_args& a, std::uint32_t g0, const float* probs, float* out) {
    for (std::uint32_t c0 = 0; c0 < a.head_dim / 8; c0 += 2) {
        __m256 acc[N][2];
        for (std::uint32_t j = 0; j < N; ++j)
            acc[j][0] = acc[j][1] = _mm256_setzero_ps();
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            if (p + kv_prefetch_ahead < a.n_ctx)
                prefetch_bytes(Row::at(row_of(a.v_blocks, a, p + kv_prefetch_ahead), c0),
                               Row::pass_bytes);
            const std::uint16_t* v = row_of(a.v_blocks, a, p);
            const __m256 v0 = Row::chunk(v, c0);
            const __m256 v1 = Row::chunk(v, c0 + 1);
            for (std::uint32_t j = 0; j < N; ++j) {
                const __m256 w = _mm256_set1_ps(probs[std::size_t{g0 + j} * a.n_ctx + p]);
                acc[j][0] = _mm256_fmadd_ps(v0, w, acc[j][0]);
                acc[j][1] = _mm256_fmadd_ps(v1, w, acc[j][1]);
            }
        }
        for (std::uint32_t j = 0; j < N; ++j) {
            float* o = out + std::size_t{g0 + j} * a.head_dim + 8 * c0;
            _mm256_storeu_ps(o, acc[j][0]);
            _mm256_storeu_ps(o + 8, acc[j][1]);
        }
    }
}

template <class Row>
void scores_all(const attention_head_args& a, float* scores) {
    for_head_tiles(a.group, [&](std::uint32_t g0, auto n) { scores_tile<Row, n>(a, g0, scores); });
}

template <class Row>
void values_all(const attention_head_args& a, const float* probs, float* out) {
    for_head_tiles(a.group,
                   [&](std::uint32_t g0, auto n) { values_tile<Row, n>(a, g0, probs, out); });
}

} // namespace

void attention_scores_avx2(const attention_head_args& a, float* scores) {
    scores_all<f16_row>(a, scores);
}
void attention_values_avx2(const attention_head_args& a, const float* probs, float* out) {
    values_all<f16_row>(a, probs, out);
}
void attention_scores_q8_avx2(const attention_head_args& a, float* scores) {
    scores_all<q8_row>(a, scores);
}
void attention_values_q8_avx2(const attention_head_args& a, const float* probs, float* out) {
    values_all<q8_row>(a, probs, out);
}

} // namespace bitnet::kernels::cpu
