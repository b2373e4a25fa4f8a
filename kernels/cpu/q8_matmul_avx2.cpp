// AVX2 family of the Q8_0 logits product (kernels/q8_matmul.hpp). The 16 lanes of the defined
// order are two ymm accumulators per (row, token): one for the first block of every 64-value
// chunk (lanes 0-7), one for the second (lanes 8-15). A block's products are ggml's sign trick:
// vpmaddubsw of |w| (unsigned) with q carrying w's sign, whose pair sums (at most 2 · 127 · 127)
// cannot saturate, then vpmaddwd with ones, so lane l sums the four products at 4l..4l+3 exactly.
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

// lane i += lane i + w for w = 8 (the two registers), 4, 2, 1: the scalar twin's fold.
inline float fold16(__m256 lo, __m256 hi) {
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}

inline __m256i load32(const std::int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// One block of row m against tokens [t0, t0 + T), added into acc[t].
template <std::size_t T>
inline void add_block(const q8_0_args& a, const std::int8_t* w, const std::uint16_t* ws,
                      std::size_t t0, std::size_t k, __m256* acc) {
    const std::size_t nb = a.k / 32;
    const std::size_t b = k / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i wv = load32(w + k);
    const __m256i aw = _mm256_sign_epi8(wv, wv); // |w|
    const __m256 sw = _mm256_set1_ps(_cvtsh_ss(ws[b]));
    for (std::size_t t = 0; t < T; ++t) {
        const __m256i xv = load32(a.q + (t0 + t) * a.k + k);
        const __m256i p16 = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv, wv));
        const __m256i dot = _mm256_madd_epi16(p16, ones);
        const __m256 s = _mm256_mul_ps(sw, _mm256_set1_ps(a.q_scale[(t0 + t) * nb + b]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, acc[t]);
    }
}

template <std::size_t T>
void row_tokens(const q8_0_args& a, std::size_t m, std::size_t t0) {
    __m256 lo[T];
    __m256 hi[T];
    for (std::size_t t = 0; t < T; ++t) {
        lo[t] = _mm256_setzero_ps();
        hi[t] = _mm256_setzero_ps();
    }
    const std::int8_t* w = a.w + m * a.k;
    const std::uint16_t* ws = a.w_scale + m * (a.k / 32);
    std::size_t k = 0;
    for (; k + 64 <= a.k; k += 64) {
        if constexpr (T == 1)
            _mm_prefetch(reinterpret_cast<const char*>(w + k + 512), _MM_HINT_T0);
        add_block<T>(a, w, ws, t0, k, lo);
        add_block<T>(a, w, ws, t0, k + 32, hi);
    }
    if (k < a.k)
        add_block<T>(a, w, ws, t0, k, lo); // a one-block last chunk: lanes 0-7 only
    for (std::size_t t = 0; t < T; ++t)
        a.y[(t0 + t) * a.ldy + m] = fold16(lo[t], hi[t]);
}

} // namespace

void q8_0_rows_avx2(const q8_0_args& a) {
    // One row against up to four tokens: 8 accumulators of the 16 registers.
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
