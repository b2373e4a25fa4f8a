// The AVX2 (F16C + FMA) family of the F16 product (kernels/f16_matmul.hpp). Each (row, token) sum
// is two ymm accumulators: lanes 0-7 and 8-15 of the defined summation order. A block of R weight
// rows is converted from F16 once per 8 columns and reused for T tokens.
#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

constexpr std::size_t lanes = 16;

// Finishes one sum: the columns past the last multiple of 16 go to lanes k % 16, then the fold of
// the scalar twin (lane i += lane i + w, w = 8, 4, 2, 1).
inline float finish(__m256 lo, __m256 hi, const std::uint16_t* w, const float* x, std::size_t n16,
                    std::size_t cols) {
    alignas(32) float acc[lanes];
    _mm256_store_ps(acc, lo);
    _mm256_store_ps(acc + 8, hi);
    for (std::size_t k = n16; k < cols; ++k) {
        const __m128 wk = _mm_cvtph_ps(_mm_cvtsi32_si128(w[k]));
        const __m128 r = _mm_fmadd_ss(wk, _mm_set_ss(x[k]), _mm_set_ss(acc[k - n16]));
        acc[k - n16] = _mm_cvtss_f32(r);
    }
    for (std::size_t width = lanes / 2; width > 0; width /= 2)
        for (std::size_t i = 0; i < width; ++i)
            acc[i] += acc[i + width];
    return acc[0];
}

inline __m256 load8_f16(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Rows [m0, m0 + R) against tokens [t0, t0 + T): 2·R·T accumulators of the 16 ymm registers.
template <std::size_t R, std::size_t T>
void block(const f16_args& a, std::size_t m0, std::size_t t0) {
    __m256 acc[2][R][T];
    for (auto& half : acc)
        for (auto& row : half)
            for (auto& v : row)
                v = _mm256_setzero_ps();
    const std::uint16_t* w[R];
    for (std::size_t r = 0; r < R; ++r)
        w[r] = a.w + (m0 + r) * a.cols;
    const float* x[T];
    for (std::size_t t = 0; t < T; ++t)
        x[t] = a.x + (t0 + t) * a.cols;
    const std::size_t n16 = a.cols / lanes * lanes;
    for (std::size_t k = 0; k < n16; k += lanes) {
        // Decode streams the rows from memory: fetch 1 KiB ahead in each of them. A batch reads
        // its rows from memory in its first token group only, the others find them in L1/L2:
        // that group fetches the next block's rows as it goes (the product of 2 tokens ran 1.4
        // times as fast with it).
        if constexpr (T == 1) {
            for (std::size_t r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + k + 512), _MM_HINT_T0);
        } else if (t0 == 0 && m0 + 2 * R <= a.row_end) {
            for (std::size_t r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + R * a.cols + k), _MM_HINT_T0);
        }
        for (std::size_t h = 0; h < 2; ++h) {
            __m256 wv[R];
            for (std::size_t r = 0; r < R; ++r)
                wv[r] = load8_f16(w[r] + k + 8 * h);
            for (std::size_t t = 0; t < T; ++t) {
                // In a register for all R rows: GCC would otherwise fold it into each FMA as a
                // memory operand, R loads where one does, and the loads limit this loop.
                __m256 xv = _mm256_loadu_ps(x[t] + k + 8 * h);
                asm("" : "+x"(xv));
                for (std::size_t r = 0; r < R; ++r)
                    acc[h][r][t] = _mm256_fmadd_ps(wv[r], xv, acc[h][r][t]);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < R; ++r)
            a.y[(t0 + t) * a.ldy + m0 + r] =
                finish(acc[0][r][t], acc[1][r][t], w[r], x[t], n16, a.cols);
}

// Tokens in groups of TMax; with TMax = 3, four left become two groups of two rather than three
// and one (a one-token group converts the rows again for a quarter of the FMA chains).
template <std::size_t R, std::size_t TMax>
void rows_all_tokens(const f16_args& a, std::size_t m0) {
    std::size_t t0 = 0;
    while (a.n_tok - t0 >= TMax) {
        if (TMax == 3 && a.n_tok - t0 == 4)
            break;
        block<R, TMax>(a, m0, t0);
        t0 += TMax;
    }
    if constexpr (TMax > 2) {
        for (; a.n_tok - t0 >= 2; t0 += 2)
            block<R, 2>(a, m0, t0);
    }
    if (a.n_tok - t0 == 1)
        block<R, 1>(a, m0, t0);
}

} // namespace

void f16_rows_avx2(const f16_args& a) {
    std::size_t m = a.row_begin;
    if (a.n_tok == 1) {
        // Decode: four rows give four independent FMA chains per half.
        for (; m + 4 <= a.row_end; m += 4)
            rows_all_tokens<4, 1>(a, m);
    } else if (a.n_tok % 2 == 0 || a.n_tok >= 7) {
        // 3 rows × 2 tokens × 2 halves = 12 accumulators, plus the 3 converted rows and x: all 16
        // registers. Each activation vector serves three rows, a third less activation traffic
        // from L2 than 2 rows × 3 tokens, which is what limits a batch: 1.15x at 32 tokens.
        for (; m + 3 <= a.row_end; m += 3)
            rows_all_tokens<3, 2>(a, m);
    } else {
        // 3 or 5 tokens: pairs would leave a one-token group that converts its rows for a third
        // of the FMAs, so 2 rows × 3 tokens (12 accumulators, the converted rows and x) instead.
        for (; m + 2 <= a.row_end; m += 2)
            rows_all_tokens<2, 3>(a, m);
    }
    for (; m < a.row_end; ++m)
        rows_all_tokens<1, 3>(a, m);
}

} // namespace bitnet::kernels::cpu
