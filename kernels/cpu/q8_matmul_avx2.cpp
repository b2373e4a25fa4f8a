// AVX2 family of the Q8_0 logits product (kernels/q8_matmul.hpp). The 16 lanes of the defined
// order are two ymm registers per (row, token): lanes 0-7 take the first 32 bytes of each of a
// group's vectors (blocks 0-7 of the group), lanes 8-15 the second 32. Products are ggml's sign
// trick: vpmaddubsw of |w| (unsigned) with q carrying w's sign, whose pair sums (at most
// 2 · 127 · 127) cannot saturate, then vpmaddwd with ones into the block's int32 lane.
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

constexpr std::size_t group_values = 512;

// lane i += lane i + w for w = 8 (the two registers), 4, 2, 1: the scalar twin's fold.
inline float fold16(__m256 lo, __m256 hi) {
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}

// All-ones in the n <= 8 low 32-bit lanes.
inline __m256i lane_mask(std::size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// n <= 8 words, zeros past them. vpmaskmovd is slow on some CPUs: full halves (all of a row's but
// the last group's) take a plain load.
inline __m256i load_words(const void* p, std::size_t n, __m256i mask) {
    if (n == 8)
        return _mm256_loadu_si256(static_cast<const __m256i*>(p));
    return _mm256_maskload_epi32(static_cast<const int*>(p), mask);
}

// n <= 8 F16 scales as floats, zeros past them.
inline __m256 scales8(const std::uint16_t* p, std::size_t n) {
    if (n == 8)
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    std::uint16_t tmp[8] = {};
    for (std::size_t i = 0; i < n; ++i)
        tmp[i] = p[i];
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp)));
}

// Tokens [t0, t0 + T) against half h (n <= 8 blocks) of a group of row w: their blocks' exact dot
// products in dot[t], lane l for block 16g + 8h + l. Full halves (n == 8, all of a row's but the
// last group's) are a separate instantiation, so the loop carries no mask.
template <std::size_t T, bool Full>
inline void half_dots(const q8_0_args& a, const std::int8_t* w, const std::int8_t* next,
                      std::size_t t0, std::size_t base, std::size_t stride, std::size_t n,
                      __m256i (&dot)[T]) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i mask = lane_mask(n);
    const std::uint8_t* q = a.q + t0 * a.k;
#pragma GCC unroll 16
    for (std::size_t t = 0; t < T; ++t) {
        dot[t] = _mm256_setzero_si256();
    }
    // Not unrolled: unrolled, GCC reassociates the sums across iterations and spills them.
#pragma GCC unroll 1
    for (std::size_t v = 0; v < 8; ++v) {
        const std::size_t at = base + stride * v;
        // The next row's bytes at the same place: one row ahead covers the time memory takes
        // when one thread streams the matrix alone (half 1 shares half 0's cache lines).
        if (next != nullptr)
            _mm_prefetch(reinterpret_cast<const char*>(next + at), _MM_HINT_T0);
        const __m256i wv = Full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + at))
                                : load_words(w + at, n, mask);
        const __m256i aw = _mm256_sign_epi8(wv, wv); // |w|
#pragma GCC unroll 16
        for (std::size_t t = 0; t < T; ++t) {
            const std::uint8_t* x = q + t * a.k + at;
            const __m256i xv = Full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))
                                    : load_words(x, n, mask);
            const __m256i p16 = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv, wv));
            dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(p16, ones));
        }
    }
}

// Row m against tokens [t0, t0 + T): the row is read from memory once for all T tokens (a
// verification step's rows, a batch's sequences).
template <std::size_t T>
void row_tokens(const q8_0_args& a, std::size_t m, std::size_t t0) {
    const std::size_t nb = a.k / 32;
    const std::size_t ng = (nb + 15) / 16;
    alignas(32) float acc[2][T][8] = {};
    const std::int8_t* w = a.w + m * a.k;
    const std::int8_t* next = m + 1 < a.row_end ? w + a.k : nullptr;
    const std::uint16_t* ws = a.w_scale + m * nb;
    for (std::size_t g = 0; g < ng; ++g) {
        const std::size_t blocks = nb - 16 * g < 16 ? nb - 16 * g : 16;
        const std::size_t stride = 4 * blocks;
        for (std::size_t h = 0; h < 2; ++h) {
            if (8 * h >= blocks)
                break;
            const std::size_t n = blocks - 8 * h < 8 ? blocks - 8 * h : 8;
            const std::size_t base = g * group_values + 32 * h;
            // Half 1 reads the cache lines half 0 fetched.
            const std::int8_t* ahead = h == 0 ? next : nullptr;
            __m256i dot[T];
            if (n == 8)
                half_dots<T, true>(a, w, ahead, t0, base, stride, n, dot);
            else
                half_dots<T, false>(a, w, ahead, t0, base, stride, n, dot);
            const __m256i mask = lane_mask(n);
            const std::size_t b = 16 * g + 8 * h;
            const __m256 sw = scales8(ws + b, n);
#pragma GCC unroll 16
            for (std::size_t t = 0; t < T; ++t) {
                const float* xs = a.q_scale + (t0 + t) * nb + b;
                const __m256 sa = n == 8 ? _mm256_loadu_ps(xs) : _mm256_maskload_ps(xs, mask);
                const __m256 old = _mm256_load_ps(acc[h][t]);
                const __m256 next_acc =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]), _mm256_mul_ps(sw, sa), old);
                // Lanes past the group's blocks keep their sums, as in the scalar twin.
                _mm256_store_ps(
                    acc[h][t],
                    n == 8 ? next_acc : _mm256_blendv_ps(old, next_acc, _mm256_castsi256_ps(mask)));
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t)
        a.y[(t0 + t) * a.ldy + m] = fold16(_mm256_load_ps(acc[0][t]), _mm256_load_ps(acc[1][t]));
}

// Tokens at most a pass takes: T accumulators, the row's two vectors, the ones and a token's two
// of the 16 registers.
constexpr std::size_t max_pass_tokens = 6;

void row_pass(const q8_0_args& a, std::size_t m, std::size_t t0, std::size_t count) {
    switch (count) {
    case 6:
        row_tokens<6>(a, m, t0);
        break;
    case 5:
        row_tokens<5>(a, m, t0);
        break;
    case 4:
        row_tokens<4>(a, m, t0);
        break;
    case 3:
        row_tokens<3>(a, m, t0);
        break;
    case 2:
        row_tokens<2>(a, m, t0);
        break;
    case 1:
        row_tokens<1>(a, m, t0);
        break;
    default:
        break;
    }
}

} // namespace

void q8_0_rows_avx2(const q8_0_args& a) {
    // Each row in as few passes as max_pass_tokens allows, of sizes as equal as they can be (8
    // tokens: 4 and 4, not 6 and 2): a pass's fixed cost, the row's load and |w|, is small, a
    // small pass's share of it large.
    const std::size_t passes = (a.n_tok + max_pass_tokens - 1) / max_pass_tokens;
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        std::size_t t = 0;
        for (std::size_t p = 0; p < passes; ++p) {
            const std::size_t count = (a.n_tok - t) / (passes - p);
            row_pass(a, m, t, count);
            t += count;
        }
    }
}

} // namespace bitnet::kernels::cpu
