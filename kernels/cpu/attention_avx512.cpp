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

/// reduce16 of sixteen sums at once: lane m of the result is reduce16(v[m]), bit for bit. Each
/// stage adds the pairs of lanes reduce16 adds (lane i + lane i + w, for w = 8, 4, 2, 1), after
/// moving the halves of two vectors side by side, so 15 shuffle pairs and one permute do the work
/// of 16 separate folds (64 shuffles, the port that also converts the K rows from F16).
__m512 reduce16x16(const __m512 (&v)[16]) {
    __m512 halves[8]; // lanes 0-7: v[2i]'s i + i+8 sums; lanes 8-15: v[2i+1]'s
    for (int i = 0; i < 8; ++i)
        halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                                  _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
    __m512 quarters[4]; // 128-bit quarter k: v[4i + k]'s i + i+4 sums
    for (int i = 0; i < 4; ++i)
        quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                                    _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xdd));
    __m512 pairs[2]; // quarter k: v[8i + k]'s two i + i+2 sums, then v[8i + 4 + k]'s
    for (int i = 0; i < 2; ++i)
        pairs[i] = _mm512_add_ps(_mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0x44),
                                 _mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0xee));
    // Quarter k: the sums of v[k], v[4 + k], v[8 + k], v[12 + k]; lane 4k + m holds v[4m + k]'s.
    const __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88),
                                      _mm512_shuffle_ps(pairs[0], pairs[1], 0xdd));
    const __m512i natural = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(natural, sums);
}

/// Values [16c, 16c + 16) of an F16 row.
struct f16_row {
    /// Where chunk c starts (values_tile reads chunks c0..c0+3 of a row in one pass).
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + 16 * c;
    }
    static constexpr std::size_t pass_bytes = 128;
    static __m512 chunk(const std::uint16_t* row, std::uint32_t c) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * c)));
    }
};

/// Values [16c, 16c + 16) of a Q8_0 row: half of block c / 2, times its scale (exact).
struct q8_row {
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + (c / 2) * q8_block_halves;
    }
    static constexpr std::size_t pass_bytes = 2 * q8_block_halves * 2;
    static __m512 chunk(const std::uint16_t* row, std::uint32_t c) {
        const std::uint16_t* block = row + (c / 2) * q8_block_halves;
        const __m512 d = _mm512_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 1) + (c % 2) * 16;
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw)), d);
    }
};

// N query heads against 16 / N positions at a time, whose N·(16 / N) sums are folded together
// (reduce16x16); the positions left over one at a time. Every sum keeps its own accumulator and
// its chunks' order, so the pass's shape never changes a bit.
template <class Row, std::uint32_t N>
void scores_tile(const attention_head_args& a, std::uint32_t g0, float* scores) {
    constexpr std::uint32_t positions = 16 / N;
    const std::uint32_t chunks = a.head_dim / 16;
    const __m512 scale = _mm512_set1_ps(a.scale);
    const std::size_t row_bytes = a.head_halves * 2;
    std::uint32_t p0 = 0;
    for (; p0 + positions <= a.n_ctx; p0 += positions) {
        const std::uint16_t* k[positions];
        for (std::uint32_t i = 0; i < positions; ++i) {
            k[i] = row_of(a.k_blocks, a, p0 + i);
            if (p0 + i + kv_prefetch_ahead < a.n_ctx)
                prefetch_bytes(row_of(a.k_blocks, a, p0 + i + kv_prefetch_ahead), row_bytes);
        }
        __m512 acc[16]; // acc[j · positions + i]: head g0 + j at position p0 + i; the rest zero
        for (auto& v : acc)
            v = _mm512_setzero_ps();
        for (std::uint32_t c = 0; c < chunks; ++c) {
            __m512 qv[N];
            for (std::uint32_t j = 0; j < N; ++j)
                qv[j] = _mm512_loadu_ps(a.q16 + std::size_t{g0 + j} * a.head_dim + 16 * c);
            for (std::uint32_t i = 0; i < positions; ++i) {
                const __m512 kv = Row::chunk(k[i], c);
                for (std::uint32_t j = 0; j < N; ++j)
                    acc[j * positions + i] = _mm512_fmadd_ps(kv, qv[j], acc[j * positions + i]);
            }
        }
        alignas(64) float s[16];
        _mm512_store_ps(s, _mm512_mul_ps(reduce16x16(acc), scale));
        for (std::uint32_t j = 0; j < N; ++j)
            for (std::uint32_t i = 0; i < positions; ++i)
                scores[std::size_t{g0 + j} * a.n_ctx + p0 + i] = s[j * positions + i];
    }
    for (std::uint32_t p = p0; p < a.n_ctx; ++p) {
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
            if (p + kv_prefetch_ahead < a.n_ctx)
                prefetch_bytes(Row::at(row_of(a.v_blocks, a, p + kv_prefetch_ahead), c0),
                               Row::pass_bytes);
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
