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
