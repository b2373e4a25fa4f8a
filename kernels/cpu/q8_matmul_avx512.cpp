// AVX-512 VNNI family of the Q8_0 logits product (kernels/q8_matmul.hpp). One zmm accumulator per
// (row, token) holds the 16 lanes of the defined order: a 64-value chunk (two blocks) is one
// vpdpbusd, whose lane l sums the four products at 4l..4l+3, i.e. lanes 0-7 are the first block
// and 8-15 the second. vpdpbusd multiplies unsigned by signed bytes, so the activations come as
// q + 128 and the accumulator starts at -128 · (the lane's four weights), computed once per weight
// chunk and shared by every token: the lane then holds Σ q·w exactly.
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

// lane i += lane i + w for w = 8, 4, 2, 1: the order of the scalar twin's fold.
inline float fold16(__m512 v) {
    const __m256 lo = _mm512_castps512_ps256(v);
    // A shuffle rather than an extract: GCC 12's extract intrinsics trip -Wmaybe-uninitialized.
    const __m256 hi = _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xee));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}

// Two consecutive scales spread over the lanes of their blocks: lanes 0-7 the first, 8-15 the
// second (the second may be garbage for a one-block chunk: its lanes are masked off).
inline __m512 spread2(__m128 two) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(two));
}

inline __m128 two_f16(const std::uint16_t* p) {
    std::int32_t bits;
    __builtin_memcpy(&bits, p, sizeof bits);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
}

inline __m128 one_f16(const std::uint16_t* p) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128(*p));
}

inline __m128 two_floats(const float* p) {
    return _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)));
}

// Rows [m0, m0 + R) against tokens [t0, t0 + T).
template <std::size_t R, std::size_t T>
void block(const q8_0_args& a, std::size_t m0, std::size_t t0) {
    const std::size_t nb = a.k / 32;
    __m512 acc[R][T];
    for (auto& row : acc)
        for (auto& v : row)
            v = _mm512_setzero_ps();
    const std::int8_t* w[R];
    const std::uint16_t* ws[R];
    for (std::size_t r = 0; r < R; ++r) {
        w[r] = a.w + (m0 + r) * a.k;
        ws[r] = a.w_scale + (m0 + r) * nb;
    }
    const std::uint8_t* x[T];
    const float* xs[T];
    for (std::size_t t = 0; t < T; ++t) {
        x[t] = a.q_unsigned + (t0 + t) * a.k;
        xs[t] = a.q_scale + (t0 + t) * nb;
    }
    const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i zero = _mm512_setzero_si512();
    const std::size_t n64 = a.k / 64 * 64;
    for (std::size_t k = 0; k < n64; k += 64) {
        const std::size_t b = k / 32;
        // Decode streams the rows from memory: fetch ahead in each of them.
        if constexpr (T == 1)
            for (std::size_t r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + k + 512), _MM_HINT_T0);
        __m512i xv[T];
        __m512 sa[T];
        for (std::size_t t = 0; t < T; ++t) {
            xv[t] = _mm512_loadu_si512(x[t] + k);
            sa[t] = spread2(two_floats(xs[t] + b));
        }
        for (std::size_t r = 0; r < R; ++r) {
            const __m512i wv = _mm512_loadu_si512(w[r] + k);
            const __m512i init = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, wv));
            const __m512 sw = spread2(two_f16(ws[r] + b));
            for (std::size_t t = 0; t < T; ++t) {
                const __m512i dot = _mm512_dpbusd_epi32(init, xv[t], wv);
                acc[r][t] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sw, sa[t]), acc[r][t]);
            }
        }
    }
    if (n64 < a.k) {
        // One block left: lanes 0-7 only, the others keep their sums, as in the scalar twin.
        const std::size_t b = n64 / 32;
        constexpr __mmask16 lanes = 0x00ff;
        for (std::size_t r = 0; r < R; ++r) {
            const __m512i wv = _mm512_zextsi256_si512(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + n64)));
            const __m512i init = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, wv));
            const __m512 sw = spread2(one_f16(ws[r] + b));
            for (std::size_t t = 0; t < T; ++t) {
                const __m512i xv = _mm512_zextsi256_si512(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t] + n64)));
                const __m512 sa = spread2(_mm_load_ss(xs[t] + b));
                const __m512i dot = _mm512_dpbusd_epi32(init, xv, wv);
                acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sw, sa),
                                                  acc[r][t], lanes);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < R; ++r)
            a.y[(t0 + t) * a.ldy + m0 + r] = fold16(acc[r][t]);
}

constexpr std::size_t max_tokens = 4;

template <std::size_t R>
void rows_all_tokens(const q8_0_args& a, std::size_t m0) {
    std::size_t t0 = 0;
    for (; t0 + max_tokens <= a.n_tok; t0 += max_tokens)
        block<R, max_tokens>(a, m0, t0);
    switch (a.n_tok - t0) {
    case 3:
        block<R, 3>(a, m0, t0);
        break;
    case 2:
        block<R, 2>(a, m0, t0);
        break;
    case 1:
        block<R, 1>(a, m0, t0);
        break;
    default:
        break;
    }
}

} // namespace

void q8_0_rows_avx512(const q8_0_args& a) {
    // Four rows at a time: each activation load feeds four rows, each weight load four tokens,
    // and 4 × 4 accumulators leave room for the operands in the 32 registers.
    constexpr std::size_t rows_per_block = 4;
    std::size_t m = a.row_begin;
    for (; m + rows_per_block <= a.row_end; m += rows_per_block)
        rows_all_tokens<rows_per_block>(a, m);
    for (; m < a.row_end; ++m)
        rows_all_tokens<1>(a, m);
}

} // namespace bitnet::kernels::cpu
