// AVX-512 attention building blocks; order as defined in attention_kernels.hpp. The query heads
// of one KV head (GQA) go together, up to four at a time: each K and V row is loaded and
// converted once for all of them, while each head keeps its own accumulators in its own order.
#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

const std::uint16_t* row_of(const std::uint16_t* const* blocks, const attention_head_args& a,
                            std::uint32_t p) {
    return blocks[p / a.block_tokens] + (p % a.block_tokens) * a.row_stride + a.kv_offset;
}

float reduce16(__m512 v) {
    // Upper eight lanes through the AVX-512F 64-bit extract (the 32-bit one needs AVX-512DQ).
    const __m256 upper = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), upper);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

/// Values [16c, 16c + 16) of an F16 row.
struct f16_row {
    static __m512 chunk(const std::uint16_t* row, std::uint32_t c) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * c)));
    }
};

/// Values [16c, 16c + 16) of a Q8_0 row: half of block c / 2, times its scale (exact).
struct q8_row {
    static __m512 chunk(const std::uint16_t* row, std::uint32_t c) {
        const std::uint16_t* block = row + (c / 2) * q8_block_halves;
        const __m512 d = _mm512_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 1) + (c % 2) * 16;
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw)), d);
    }
};

template <class Row, std::uint32_t N>
void scores_tile(const attention_head_args& a, std::uint32_t g0, float* scores) {
    const std::uint32_t chunks = a.head_dim / 16;
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m512 acc[N];
        for (std::uint32_t j = 0; j < N; ++j)
            acc[j] = _mm512_setzero_ps();
        for (std::uint32_t c = 0; c < chunks; ++c) {
            const __m512 kv = Row::chunk(k, c);
            for (std::uint32_t j = 0; j < N; ++j)
                acc[j] = _mm512_fmadd_ps(
                    kv, _mm512_loadu_ps(a.q16 + std::size_t{g0 + j} * a.head_dim + 16 * c), acc[j]);
        }
        for (std::uint32_t j = 0; j < N; ++j)
            scores[std::size_t{g0 + j} * a.n_ctx + p] = reduce16(acc[j]) * a.scale;
    }
}

template <class Row, std::uint32_t N>
void values_tile(const attention_head_args& a, std::uint32_t g0, const float* probs, float* out) {
    for (std::uint32_t c0 = 0; c0 < a.head_dim / 16; c0 += 4) {
        const std::uint32_t n = a.head_dim / 16 - c0 < 4 ? a.head_dim / 16 - c0 : 4;
        __m512 acc[N][4];
        for (std::uint32_t j = 0; j < N; ++j)
            for (std::uint32_t i = 0; i < 4; ++i)
                acc[j][i] = _mm512_setzero_ps();
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p);
            __m512 vv[4];
            for (std::uint32_t i = 0; i < n; ++i)
                vv[i] = Row::chunk(v, c0 + i);
            for (std::uint32_t j = 0; j < N; ++j) {
                const __m512 w = _mm512_set1_ps(probs[std::size_t{g0 + j} * a.n_ctx + p]);
                for (std::uint32_t i = 0; i < n; ++i)
                    acc[j][i] = _mm512_fmadd_ps(vv[i], w, acc[j][i]);
            }
        }
        for (std::uint32_t j = 0; j < N; ++j)
            for (std::uint32_t i = 0; i < n; ++i)
                _mm512_storeu_ps(out + std::size_t{g0 + j} * a.head_dim + 16 * (c0 + i), acc[j][i]);
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

void attention_scores_avx512(const attention_head_args& a, float* scores) {
    scores_all<f16_row>(a, scores);
}
void attention_values_avx512(const attention_head_args& a, const float* probs, float* out) {
    values_all<f16_row>(a, probs, out);
}
void attention_scores_q8_avx512(const attention_head_args& a, float* scores) {
    scores_all<q8_row>(a, scores);
}
void attention_values_q8_avx512(const attention_head_args& a, const float* probs, float* out) {
    values_all<q8_row>(a, probs, out);
}

} // namespace bitnet::kernels::cpu
