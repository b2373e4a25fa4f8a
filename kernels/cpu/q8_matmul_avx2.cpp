// AVX2 family of the int8 logits product: bytes widened to int16 and multiplied pairwise into
// int32 (vpmaddwd, exact; vpmaddubsw would saturate), one row against up to 4 tokens at a time.
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

__m256i widen16(const std::int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

std::int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

template <std::size_t T>
void row_tokens(const q8_args& a, std::size_t m, std::size_t t0) {
    __m256i acc[T];
    for (std::size_t t = 0; t < T; ++t)
        acc[t] = _mm256_setzero_si256();
    const std::int8_t* w = a.w + m * a.k;
    for (std::size_t i = 0; i < a.k; i += 16) {
        const __m256i wv = widen16(w + i);
        for (std::size_t t = 0; t < T; ++t)
            acc[t] =
                _mm256_add_epi32(acc[t], _mm256_madd_epi16(wv, widen16(a.q + (t0 + t) * a.k + i)));
    }
    const std::size_t n_rows = a.row_end - a.row_begin;
    for (std::size_t t = 0; t < T; ++t)
        a.dots[(t0 + t) * n_rows + (m - a.row_begin)] = hsum(acc[t]);
}

} // namespace

void q8_dots_avx2(const q8_args& a) {
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        std::size_t t = 0;
        for (; t + 4 <= a.n_tok; t += 4)
            row_tokens<4>(a, m, t);
        switch (a.n_tok - t) {
        case 3:
            row_tokens<3>(a, m, t);
            break;
        case 2:
            row_tokens<2>(a, m, t);
            break;
        case 1:
            row_tokens<1>(a, m, t);
            break;
        default:
            break;
        }
    }
}

} // namespace bitnet::kernels::cpu
