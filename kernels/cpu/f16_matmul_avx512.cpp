// The AVX-512 family of the F16 product (kernels/f16_matmul.hpp). One zmm accumulator per (row,
// token) holds the 16 lanes of the defined summation order; a block of R weight rows is converted
// from F16 once per 16 columns and reused for T tokens, and the rows stay in L1 while the next
// token group passes over them, so the weight is streamed from memory once per call.
#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/cpu/lane_fold_avx512.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

// Rows [m0, m0 + R) against tokens [t0, t0 + T). R × T ≤ 20 accumulators.
template <std::size_t R, std::size_t T>
void block(const f16_args& a, std::size_t m0, std::size_t t0) {
    __m512 acc[R][T];
    for (auto& row : acc)
        for (auto& v : row)
            v = _mm512_setzero_ps();
    const std::uint16_t* w[R];
    for (std::size_t r = 0; r < R; ++r)
        w[r] = a.w + (m0 + r) * a.cols;
    const float* x[T];
    for (std::size_t t = 0; t < T; ++t)
        x[t] = a.x + (t0 + t) * a.cols;
    const std::size_t n16 = a.cols / 16 * 16;
    for (std::size_t k = 0; k < n16; k += 16) {
        // Decode streams the rows from memory: fetch 1 KiB ahead in each of them. A batch reads
        // its rows from memory in its first token group only, the others find them in L1/L2:
        // that group fetches the next block's rows as it goes, as the AVX2 family does (8 tokens
        // ran 1.12-1.23 times as fast with it on 1 Xeon thread, 1.26-1.37 on 2).
        if constexpr (T == 1) {
            for (std::size_t r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + k + 512), _MM_HINT_T0);
        } else if (t0 == 0 && m0 + 2 * R <= a.row_end) {
            for (std::size_t r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(w[r] + R * a.cols + k), _MM_HINT_T0);
        }
        __m512 wv[R];
        for (std::size_t r = 0; r < R; ++r)
            wv[r] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + k)));
        for (std::size_t t = 0; t < T; ++t) {
            const __m512 xv = _mm512_loadu_ps(x[t] + k);
            for (std::size_t r = 0; r < R; ++r)
                acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    if (n16 < a.cols) {
        // Lanes past the last column keep their sums untouched, as in the scalar twin.
        const auto m = static_cast<__mmask16>((1u << (a.cols - n16)) - 1u);
        for (std::size_t r = 0; r < R; ++r) {
            const __m512 wv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w[r] + n16));
            for (std::size_t t = 0; t < T; ++t)
                acc[r][t] =
                    _mm512_mask3_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x[t] + n16), acc[r][t], m);
        }
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < R; ++r)
            a.y[(t0 + t) * a.ldy + m0 + r] = fold16(acc[r][t]);
}

constexpr std::size_t max_tokens = 4;

// Tokens in groups of four; five left become one group of five (R = 4: 20 accumulators, the
// converted rows and x in 25 of the 32 registers) rather than four and one. A verification step
// (a token and four drafts) is five rows, and a one-token group after a group of four would
// convert the rows again and run four FMA chains, too few to cover the FMA latency.
template <std::size_t R>
void rows_all_tokens(const f16_args& a, std::size_t m0) {
    std::size_t t0 = 0;
    while (a.n_tok - t0 >= max_tokens) {
        if (a.n_tok - t0 == max_tokens + 1) {
            block<R, max_tokens + 1>(a, m0, t0);
            return;
        }
        block<R, max_tokens>(a, m0, t0);
        t0 += max_tokens;
    }
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

void f16_rows_avx512(const f16_args& a) {
    // Four rows at a time: four independent FMA chains per token cover the FMA latency, and
    // 4 rows × 4 tokens is 16 accumulators, half the register file (one token: eight rows).
    constexpr std::size_t rows_per_block = 4;
    std::size_t m = a.row_begin;
    if (a.n_tok == 1)
        for (; m + 8 <= a.row_end; m += 8)
            block<8, 1>(a, m, 0);
    for (; m + rows_per_block <= a.row_end; m += rows_per_block)
        rows_all_tokens<rows_per_block>(a, m);
    for (; m < a.row_end; ++m)
        rows_all_tokens<1>(a, m);
}

} // namespace bitnet::kernels::cpu
