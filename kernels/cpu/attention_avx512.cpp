// AVX-512 attention building blocks; order as defined in attention_kernels.hpp.
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

} // namespace

void attention_scores_avx512(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m512 acc = _mm512_setzero_ps();
        for (std::uint32_t d = 0; d < a.head_dim; d += 16) {
            const __m512 kv =
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + d)));
            acc = _mm512_fmadd_ps(kv, _mm512_loadu_ps(a.q16 + d), acc);
        }
        scores[p] = reduce16(acc) * a.scale;
    }
}

void attention_values_avx512(const attention_head_args& a, const float* probs, float* out) {
    for (std::uint32_t d0 = 0; d0 < a.head_dim; d0 += 64) {
        const std::uint32_t n = a.head_dim - d0 < 64 ? a.head_dim - d0 : 64;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                         _mm512_setzero_ps()};
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p) + d0;
            const __m512 w = _mm512_set1_ps(probs[p]);
            for (std::uint32_t j = 0; j < n / 16; ++j) {
                const __m512 vv = _mm512_cvtph_ps(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 16 * j)));
                acc[j] = _mm512_fmadd_ps(vv, w, acc[j]);
            }
        }
        for (std::uint32_t j = 0; j < n / 16; ++j)
            _mm512_storeu_ps(out + d0 + 16 * j, acc[j]);
    }
}

} // namespace bitnet::kernels::cpu

namespace bitnet::kernels::cpu {
namespace {

/// 16 int8 of a Q8_0 block as floats times the block's scale (exact).
__m512 q8_16(const std::int8_t* q, __m512 d) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw)), d);
}

__m512 q8_scale(const std::uint16_t* block) {
    return _mm512_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
}

const std::int8_t* q8_values(const std::uint16_t* block) {
    return reinterpret_cast<const std::int8_t*>(block + 1);
}

} // namespace

void attention_scores_q8_avx512(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m512 acc = _mm512_setzero_ps();
        for (std::uint32_t d = 0; d < a.head_dim; d += q8_block_values, k += q8_block_halves) {
            const __m512 s = q8_scale(k);
            acc = _mm512_fmadd_ps(q8_16(q8_values(k), s), _mm512_loadu_ps(a.q16 + d), acc);
            acc =
                _mm512_fmadd_ps(q8_16(q8_values(k) + 16, s), _mm512_loadu_ps(a.q16 + d + 16), acc);
        }
        scores[p] = reduce16(acc) * a.scale;
    }
}

void attention_values_q8_avx512(const attention_head_args& a, const float* probs, float* out) {
    for (std::uint32_t d0 = 0; d0 < a.head_dim; d0 += 64) {
        const std::uint32_t n = a.head_dim - d0 < 64 ? a.head_dim - d0 : 64;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                         _mm512_setzero_ps()};
        const std::size_t first_block = d0 / q8_block_values;
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p) + first_block * q8_block_halves;
            const __m512 w = _mm512_set1_ps(probs[p]);
            for (std::uint32_t b = 0; b < n / q8_block_values; ++b, v += q8_block_halves) {
                const __m512 s = q8_scale(v);
                acc[2 * b] = _mm512_fmadd_ps(q8_16(q8_values(v), s), w, acc[2 * b]);
                acc[2 * b + 1] = _mm512_fmadd_ps(q8_16(q8_values(v) + 16, s), w, acc[2 * b + 1]);
            }
        }
        for (std::uint32_t j = 0; j < n / 16; ++j)
            _mm512_storeu_ps(out + d0 + 16 * j, acc[j]);
    }
}

} // namespace bitnet::kernels::cpu
