// AVX-512 VNNI family of the int8 logits product: vpdpbusd on (q + 128) × w8 in blocks of 4 rows ×
// 4 tokens (16 accumulators, each weight load feeding 4 tokens), then 128 · row_sum taken back out.
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

template <std::size_t R, std::size_t T>
void block(const q8_args& a, std::size_t m0, std::size_t t0) {
    __m512i acc[R][T];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t)
            acc[r][t] = _mm512_setzero_si512();
    const std::int8_t* w[R];
    for (std::size_t r = 0; r < R; ++r)
        w[r] = a.w + (m0 + r) * a.k;
    for (std::size_t i = 0; i < a.k; i += 64) {
        __m512i x[T];
        for (std::size_t t = 0; t < T; ++t)
            x[t] = _mm512_loadu_si512(a.q_unsigned + (t0 + t) * a.k + i);
        for (std::size_t r = 0; r < R; ++r) {
            const __m512i wv = _mm512_loadu_si512(w[r] + i);
            for (std::size_t t = 0; t < T; ++t)
                acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], x[t], wv);
        }
    }
    const std::size_t n_rows = a.row_end - a.row_begin;
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t)
            a.dots[(t0 + t) * n_rows + (m0 + r - a.row_begin)] =
                _mm512_reduce_add_epi32(acc[r][t]) - 128 * a.row_sum[m0 + r];
}

template <std::size_t R>
void rows_block(const q8_args& a, std::size_t m0) {
    std::size_t t = 0;
    for (; t + 4 <= a.n_tok; t += 4)
        block<R, 4>(a, m0, t);
    switch (a.n_tok - t) {
    case 3:
        block<R, 3>(a, m0, t);
        break;
    case 2:
        block<R, 2>(a, m0, t);
        break;
    case 1:
        block<R, 1>(a, m0, t);
        break;
    default:
        break;
    }
}

} // namespace

void q8_dots_avx512(const q8_args& a) {
    std::size_t m = a.row_begin;
    for (; m + 4 <= a.row_end; m += 4)
        rows_block<4>(a, m);
    for (; m < a.row_end; ++m)
        rows_block<1>(a, m);
}

} // namespace bitnet::kernels::cpu
