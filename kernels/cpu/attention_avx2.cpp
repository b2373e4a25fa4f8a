// AVX2 attention building blocks; order as defined in attention_kernels.hpp (the 16 lanes are
// two 8-lane registers).
#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

const std::uint16_t* row_of(const std::uint16_t* const* blocks, const attention_head_args& a,
                            std::uint32_t p) {
    return blocks[p / a.block_tokens] + (p % a.block_tokens) * a.row_stride + a.kv_offset;
}

__m256 load_half8(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

} // namespace

void attention_scores_avx2(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m256 lo = _mm256_setzero_ps(); // lanes 0..7
        __m256 hi = _mm256_setzero_ps(); // lanes 8..15
        for (std::uint32_t d = 0; d < a.head_dim; d += 16) {
            lo = _mm256_fmadd_ps(load_half8(k + d), _mm256_loadu_ps(a.q16 + d), lo);
            hi = _mm256_fmadd_ps(load_half8(k + d + 8), _mm256_loadu_ps(a.q16 + d + 8), hi);
        }
        const __m256 h = _mm256_add_ps(lo, hi);
        __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        q = _mm_add_ss(q, _mm_movehdup_ps(q));
        scores[p] = _mm_cvtss_f32(q) * a.scale;
    }
}

void attention_values_avx2(const attention_head_args& a, const float* probs, float* out) {
    for (std::uint32_t d0 = 0; d0 < a.head_dim; d0 += 32) {
        const std::uint32_t n = a.head_dim - d0 < 32 ? a.head_dim - d0 : 32;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p) + d0;
            const __m256 w = _mm256_set1_ps(probs[p]);
            for (std::uint32_t j = 0; j < n / 8; ++j)
                acc[j] = _mm256_fmadd_ps(load_half8(v + 8 * j), w, acc[j]);
        }
        for (std::uint32_t j = 0; j < n / 8; ++j)
            _mm256_storeu_ps(out + d0 + 8 * j, acc[j]);
    }
}

} // namespace bitnet::kernels::cpu

namespace bitnet::kernels::cpu {
namespace {

/// 8 int8 of a Q8_0 block as floats times the block's scale (exact).
__m256 q8_8(const std::int8_t* q, __m256 d) {
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw)), d);
}

__m256 q8_scale(const std::uint16_t* block) {
    return _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
}

const std::int8_t* q8_values(const std::uint16_t* block) {
    return reinterpret_cast<const std::int8_t*>(block + 1);
}

} // namespace

void attention_scores_q8_avx2(const attention_head_args& a, float* scores) {
    for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
        const std::uint16_t* k = row_of(a.k_blocks, a, p);
        __m256 lo = _mm256_setzero_ps(); // lanes 0..7
        __m256 hi = _mm256_setzero_ps(); // lanes 8..15
        for (std::uint32_t d = 0; d < a.head_dim; d += q8_block_values, k += q8_block_halves) {
            const __m256 s = q8_scale(k);
            const std::int8_t* q = q8_values(k);
            lo = _mm256_fmadd_ps(q8_8(q, s), _mm256_loadu_ps(a.q16 + d), lo);
            hi = _mm256_fmadd_ps(q8_8(q + 8, s), _mm256_loadu_ps(a.q16 + d + 8), hi);
            lo = _mm256_fmadd_ps(q8_8(q + 16, s), _mm256_loadu_ps(a.q16 + d + 16), lo);
            hi = _mm256_fmadd_ps(q8_8(q + 24, s), _mm256_loadu_ps(a.q16 + d + 24), hi);
        }
        const __m256 h = _mm256_add_ps(lo, hi);
        __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        q = _mm_add_ss(q, _mm_movehdup_ps(q));
        scores[p] = _mm_cvtss_f32(q) * a.scale;
    }
}

void attention_values_q8_avx2(const attention_head_args& a, const float* probs, float* out) {
    for (std::uint32_t d0 = 0; d0 < a.head_dim; d0 += 32) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        const std::size_t block = d0 / q8_block_values;
        for (std::uint32_t p = 0; p < a.n_ctx; ++p) {
            const std::uint16_t* v = row_of(a.v_blocks, a, p) + block * q8_block_halves;
            const __m256 w = _mm256_set1_ps(probs[p]);
            const __m256 s = q8_scale(v);
            const std::int8_t* q = q8_values(v);
            for (std::uint32_t j = 0; j < 4; ++j)
                acc[j] = _mm256_fmadd_ps(q8_8(q + 8 * j, s), w, acc[j]);
        }
        for (std::uint32_t j = 0; j < 4; ++j)
            _mm256_storeu_ps(out + d0 + 8 * j, acc[j]);
    }
}

} // namespace bitnet::kernels::cpu
