// AVX-512 VNNI family of the Q8_0 logits product (kernels/q8_matmul.hpp). In the packed layout one
// 64-byte vector holds the same four values of the 16 blocks of a group, so vpdpbusd adds each
// block's products into the block's own int32 lane, and after the group's 8 vectors lane l holds
// block l's exact dot product: one float conversion and one fma per 512 values per (row, token).
// vpdpbusd multiplies unsigned by signed bytes, so the activations come as q + 128 and 128 · Σ w
// over each block is taken back out: in batches it is computed once per row block into the
// scratch, where each (row, token) lane starts, and shared by every token; in decode it is summed
// beside the product, in the same pass over the row.
#include "kernels/cpu/lane_fold_avx512.hpp"
#include "kernels/cpu/q8_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

constexpr std::size_t group_values = 512;

// Group g of a row: where it starts, the stride of its 8 vectors, and its lanes. Every group but
// a row's last is full (16 blocks, 64-byte vectors); the kernels take full groups through plain
// loads and a constant mask, and only a short last group through masked loads.
template <bool Full>
struct group_view {
    std::size_t base;
    std::size_t stride; // 4 · G bytes
    __mmask16 lanes;    // the G low lanes

    group_view(std::size_t nb, std::size_t g)
        : base(g * group_values)
        , stride(Full ? 64 : 4 * (nb - 16 * g))
        , lanes(Full ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (nb - 16 * g)) - 1u)) {}

    [[nodiscard]] __m512i words(const void* row, std::size_t v) const {
        const auto* p = static_cast<const std::uint8_t*>(row) + base + stride * v;
        if constexpr (Full)
            return _mm512_loadu_si512(p);
        else
            return _mm512_maskz_loadu_epi32(lanes, p);
    }
    [[nodiscard]] __m512 floats(const float* p) const {
        if constexpr (Full)
            return _mm512_loadu_ps(p);
        else
            return _mm512_maskz_loadu_ps(lanes, p);
    }
    [[nodiscard]] __m512 f16s(const std::uint16_t* p) const {
        if constexpr (Full)
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        else
            return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, p));
    }
    // acc += float(dot) · (sw · sa) in the group's lanes; the others keep their sums, as in the
    // scalar twin.
    [[nodiscard]] __m512 add(__m512 acc, __m512i dot, __m512 sw, __m512 sa) const {
        const __m512 d = _mm512_cvtepi32_ps(dot);
        if constexpr (Full)
            return _mm512_fmadd_ps(d, _mm512_mul_ps(sw, sa), acc);
        else
            return _mm512_mask3_fmadd_ps(d, _mm512_mul_ps(sw, sa), acc, lanes);
    }
};

// 128 in every byte, the unsigned operand that sums a block's weights. A function, not a global:
// a global's initializer would run at start-up, on CPUs without AVX-512 too.
inline __m512i c128() {
    return _mm512_set1_epi8(static_cast<char>(0x80));
}

// Calls fn(group_view<true>, g) for the full groups of a row and fn(group_view<false>, g) for a
// short last one.
template <class Fn>
inline void for_each_group(std::size_t nb, Fn&& fn) {
    std::size_t g = 0;
    for (; 16 * (g + 1) <= nb; ++g)
        fn(group_view<true>(nb, g), g);
    if (16 * g < nb)
        fn(group_view<false>(nb, g), g);
}

// -128 · Σ w per lane, for rows [m0, m0 + n_rows) and every group, into the scratch.
void corrections(const q8_0_args& a, std::size_t m0, std::size_t n_rows) {
    const std::size_t nb = a.k / 32;
    const std::size_t ng = (nb + 15) / 16;
    for (std::size_t r = 0; r < n_rows; ++r) {
        const std::int8_t* w = a.w + (m0 + r) * a.k;
        for_each_group(nb, [&](const auto& gv, std::size_t g) {
            __m512i sum = _mm512_setzero_si512();
            for (std::size_t v = 0; v < 8; ++v)
                sum = _mm512_dpbusd_epi32(sum, c128(), gv.words(w, v));
            _mm512_storeu_si512(a.scratch + (r * ng + g) * 16,
                                _mm512_sub_epi32(_mm512_setzero_si512(), sum));
        });
    }
}

// Rows [m0, m0 + R) against tokens [t0, t0 + T); the scratch holds the rows' corrections.
template <std::size_t R, std::size_t T>
void block(const q8_0_args& a, std::size_t m0, std::size_t t0) {
    const std::size_t nb = a.k / 32;
    const std::size_t ng = (nb + 15) / 16;
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
        x[t] = a.q + (t0 + t) * a.k;
        xs[t] = a.q_scale + (t0 + t) * nb;
    }
    for_each_group(nb, [&](const auto& gv, std::size_t g) {
        __m512i dot[R][T];
        for (std::size_t r = 0; r < R; ++r) {
            const __m512i init = _mm512_loadu_si512(a.scratch + (r * ng + g) * 16);
            for (std::size_t t = 0; t < T; ++t)
                dot[r][t] = init;
        }
        for (std::size_t v = 0; v < 8; ++v) {
            __m512i wv[R];
            for (std::size_t r = 0; r < R; ++r)
                wv[r] = gv.words(w[r], v);
            for (std::size_t t = 0; t < T; ++t) {
                const __m512i xv = gv.words(x[t], v);
                for (std::size_t r = 0; r < R; ++r)
                    dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], xv, wv[r]);
            }
        }
        __m512 sa[T];
        for (std::size_t t = 0; t < T; ++t)
            sa[t] = gv.floats(xs[t] + 16 * g);
        for (std::size_t r = 0; r < R; ++r) {
            const __m512 sw = gv.f16s(ws[r] + 16 * g);
            for (std::size_t t = 0; t < T; ++t)
                acc[r][t] = gv.add(acc[r][t], dot[r][t], sw, sa[t]);
        }
    });
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < R; ++r)
            a.y[(t0 + t) * a.ldy + m0 + r] = fold16(acc[r][t]);
}

// Decode: rows [m0, m0 + R) against one token in one pass over the rows, the correction summed
// beside the product (no scratch), so each weight byte is read from memory once, by one load.
template <std::size_t R>
void decode_block(const q8_0_args& a, std::size_t m0) {
    const std::size_t nb = a.k / 32;
    __m512 acc[R];
    const std::int8_t* w[R];
    const std::uint16_t* ws[R];
    for (std::size_t r = 0; r < R; ++r) {
        acc[r] = _mm512_setzero_ps();
        w[r] = a.w + (m0 + r) * a.k;
        ws[r] = a.w_scale + (m0 + r) * nb;
    }
    for_each_group(nb, [&](const auto& gv, std::size_t g) {
        __m512i dot[R];
        __m512i corr[R];
        for (std::size_t r = 0; r < R; ++r) {
            dot[r] = _mm512_setzero_si512();
            corr[r] = _mm512_setzero_si512();
        }
        for (std::size_t v = 0; v < 8; ++v) {
            const __m512i xv = gv.words(a.q, v);
            for (std::size_t r = 0; r < R; ++r) {
                const __m512i wv = gv.words(w[r], v);
                dot[r] = _mm512_dpbusd_epi32(dot[r], xv, wv);
                corr[r] = _mm512_dpbusd_epi32(corr[r], c128(), wv);
            }
        }
        const __m512 sa = gv.floats(a.q_scale + 16 * g);
        for (std::size_t r = 0; r < R; ++r)
            acc[r] = gv.add(acc[r], _mm512_sub_epi32(dot[r], corr[r]), gv.f16s(ws[r] + 16 * g), sa);
    });
    for (std::size_t r = 0; r < R; ++r)
        a.y[m0 + r] = fold16(acc[r]);
}

// Tokens per tile: 4 rows × 3 tokens keep 12 int and 12 float accumulators in the 32 registers.
constexpr std::size_t max_tokens = 3;

template <std::size_t R>
void rows_all_tokens(const q8_0_args& a, std::size_t m0) {
    corrections(a, m0, R);
    // The next row block into L2 while this one computes from L1: its correction pass would
    // otherwise wait on memory for every line.
    if (m0 + 2 * R <= a.row_end)
        for (std::size_t i = 0; i < R * a.k; i += 64)
            _mm_prefetch(reinterpret_cast<const char*>(a.w + (m0 + R) * a.k + i), _MM_HINT_T1);
    std::size_t t0 = 0;
    for (; t0 + max_tokens <= a.n_tok; t0 += max_tokens)
        block<R, max_tokens>(a, m0, t0);
    switch (a.n_tok - t0) {
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
    std::size_t m = a.row_begin;
    if (a.n_tok == 1) {
        // Decode streams each row once: 4 rows keep 8 dpbusd chains in flight.
        for (; m + 4 <= a.row_end; m += 4)
            decode_block<4>(a, m);
        for (; m < a.row_end; ++m)
            decode_block<1>(a, m);
        return;
    }
    // Batches: 4 rows at a time, each weight vector feeding 3 tokens, each activation vector 4
    // rows.
    for (; m + 4 <= a.row_end; m += 4)
        rows_all_tokens<4>(a, m);
    for (; m < a.row_end; ++m)
        rows_all_tokens<1>(a, m);
}

} // namespace bitnet::kernels::cpu
