// AVX2 attention building blocks; order as defined in attention_kernels.hpp (the 16 lanes are
// two 8-lane registers). As in the AVX-512 family, the query heads of one KV head go together,
// up to four at a time, each with its own accumulators.
#include "kernels/cpu/attention_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

namespace bitnet::kernels::cpu {
namespace {

// The rows of consecutive positions, from position p on, without a division each: the block
// and the row within it advance together. (Dividing by the block size per position cost more
// than the eight FMAs of a values pass.)
class row_walker {
public:
    row_walker(const std::uint16_t* const* blocks, const attention_head_args& a, std::uint32_t p)
        : blocks_(blocks)
        , block_tokens_(a.block_tokens)
        , stride_(a.row_stride)
        , offset_(a.kv_offset)
        , block_(p / a.block_tokens)
        , row_(p % a.block_tokens) {}
    /// This position's row; only while the position is below n_ctx.
    const std::uint16_t* row() const { return blocks_[block_] + row_ * stride_ + offset_; }
    void next() {
        if (++row_ == block_tokens_) {
            row_ = 0;
            ++block_;
        }
    }

private:
    const std::uint16_t* const* blocks_;
    std::uint32_t block_tokens_;
    std::size_t stride_;
    std::size_t offset_;
    std::uint32_t block_;
    std::uint32_t row_;
};

/// Values [8c, 8c + 8) of an F16 row.
struct f16_row {
    /// Where chunks c and c + 1 start (what a pass of values_tile reads of the row).
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + 8 * c;
    }
    static constexpr std::size_t pass_bytes = 32;
    static __m256 chunk(const std::uint16_t* row, std::uint32_t c) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8 * c)));
    }
};

/// Values [8c, 8c + 8) of a Q8_0 row: a quarter of block c / 4, times its scale (exact).
struct q8_row {
    static const std::uint16_t* at(const std::uint16_t* row, std::uint32_t c) {
        return row + (c / 4) * q8_block_halves;
    }
    static constexpr std::size_t pass_bytes = q8_block_halves * 2;
    static __m256 chunk(const std::uint16_t* row, std::uint32_t c) {
        const std::uint16_t* block = row + (c / 4) * q8_block_halves;
        const __m256 d = _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(block[0]))));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 1) + (c % 4) * 8;
        const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw)), d);
    }
};

// The last three halvings of one score's 16 lanes (h = lanes 0..7 + lanes 8..15 already summed),
// in the defined order: lanes 0..3 + 4..7, then 0..1 + 2..3, then 0 + 1.
inline float fold_one(__m256 h) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

// The same halvings for 8 scores at once (h[i] of position i): each add below pairs the same two
// partial sums as fold_one, so every score keeps its bits, with 15 adds and 15 shuffles instead of
// 8 × 6 operations. Returns the 8 sums in position order.
inline __m256 fold_eight(const float (*h)[8]) {
    auto halves = [&](int i) { // positions i, i + 1: lanes 0..3 + 4..7 of each
        const __m256 a = _mm256_load_ps(h[i]);
        const __m256 b = _mm256_load_ps(h[i + 1]);
        return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20),
                             _mm256_permute2f128_ps(a, b, 0x31));
    };
    // s01: [p0's 4 | p1's 4], and so on; then lanes 0, 1 + 2, 3 of four positions at once.
    const __m256 s01 = halves(0), s23 = halves(2), s45 = halves(4), s67 = halves(6);
    const __m256 u =
        _mm256_add_ps(_mm256_shuffle_ps(s01, s23, 0x44), _mm256_shuffle_ps(s01, s23, 0xee));
    const __m256 v =
        _mm256_add_ps(_mm256_shuffle_ps(s45, s67, 0x44), _mm256_shuffle_ps(s45, s67, 0xee));
    // Lane 0 + lane 1: positions 0 2 4 6 | 1 3 5 7, then back in order.
    const __m256 w = _mm256_add_ps(_mm256_shuffle_ps(u, v, 0x88), _mm256_shuffle_ps(u, v, 0xdd));
    return _mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Head dimensions up to this have their N query rows interleaved for scores_tile (16 floats of
// each head in turn), so the inner loop reads them through one pointer at fixed offsets; longer
// heads read the rows where they are.
constexpr std::uint32_t max_interleaved_dim = 256;

template <class Row, std::uint32_t N>
void scores_tile(const attention_head_args& a, std::uint32_t g0, float* scores) {
    alignas(32) float interleaved[N * max_interleaved_dim];
    const bool fits = a.head_dim <= max_interleaved_dim;
    if (fits)
        for (std::uint32_t d = 0; d < a.head_dim; d += 16)
            for (std::uint32_t j = 0; j < N; ++j)
                for (std::uint32_t l = 0; l < 16; ++l)
                    interleaved[(d / 16 * N + j) * 16 + l] =
                        a.q16[std::size_t{g0 + j} * a.head_dim + d + l];
    // Query row j's floats d..d+15 at q + (d / 16) · step + j · head.
    const float* q = fits ? interleaved : a.q16 + std::size_t{g0} * a.head_dim;
    const std::size_t step = fits ? std::size_t{16} * N : 16;
    const std::size_t head = fits ? 16 : a.head_dim;
    const std::size_t row_bytes = a.head_halves * 2;
    const __m256 scale = _mm256_set1_ps(a.scale);
    alignas(32) float h[N][8][8]; // per head, the first halving of up to 8 positions' lanes
    row_walker rows(a.k_blocks, a, 0), ahead(a.k_blocks, a, kv_prefetch_ahead);
    for (std::uint32_t p0 = 0; p0 < a.n_ctx; p0 += 8) {
        const std::uint32_t n_pos = a.n_ctx - p0 < 8 ? a.n_ctx - p0 : 8;
        for (std::uint32_t i = 0; i < n_pos; ++i) {
            const std::uint32_t p = p0 + i;
            if (p + kv_prefetch_ahead < a.n_ctx) {
                prefetch_bytes(ahead.row(), row_bytes);
                ahead.next();
            }
            const std::uint16_t* k = rows.row();
            rows.next();
            __m256 lo[N], hi[N]; // lanes 0..7 and 8..15 of each head
            for (std::uint32_t j = 0; j < N; ++j)
                lo[j] = hi[j] = _mm256_setzero_ps();
            const float* qd = q;
            for (std::uint32_t d = 0; d < a.head_dim; d += 16, qd += step) {
                const __m256 k_lo = Row::chunk(k, d / 8);
                const __m256 k_hi = Row::chunk(k, d / 8 + 1);
                for (std::uint32_t j = 0; j < N; ++j) {
                    lo[j] = _mm256_fmadd_ps(k_lo, _mm256_loadu_ps(qd + j * head), lo[j]);
                    hi[j] = _mm256_fmadd_ps(k_hi, _mm256_loadu_ps(qd + j * head + 8), hi[j]);
                }
            }
            for (std::uint32_t j = 0; j < N; ++j)
                _mm256_store_ps(h[j][i], _mm256_add_ps(lo[j], hi[j]));
        }
        for (std::uint32_t j = 0; j < N; ++j) {
            float* out = scores + std::size_t{g0 + j} * a.n_ctx + p0;
            if (n_pos == 8) {
                _mm256_storeu_ps(out, _mm256_mul_ps(fold_eight(h[j]), scale));
                continue;
            }
            for (std::uint32_t i = 0; i < n_pos; ++i)
                out[i] = fold_one(_mm256_load_ps(h[j][i])) * a.scale;
        }
    }
}

// Positions in blocks of values_block: each block's row pointers and its probabilities
// (interleaved, the N heads' weights of one position side by side) are gathered once, so the
// inner loop of each pass is loads, broadcasts and FMAs. Between blocks a pass's sums wait in
// `out` (a float stored and loaded back is the same float).
constexpr std::uint32_t values_block = 128;

template <class Row, std::uint32_t N>
void values_tile(const attention_head_args& a, std::uint32_t g0, const float* probs, float* out) {
    alignas(32) float weights[values_block][N];
    const std::uint16_t* rows[values_block + kv_prefetch_ahead];
    for (std::uint32_t p0 = 0; p0 < a.n_ctx; p0 += values_block) {
        const std::uint32_t n = a.n_ctx - p0 < values_block ? a.n_ctx - p0 : values_block;
        const std::uint32_t n_rows = a.n_ctx - p0 < values_block + kv_prefetch_ahead
                                         ? a.n_ctx - p0
                                         : values_block + kv_prefetch_ahead;
        row_walker walk(a.v_blocks, a, p0);
        for (std::uint32_t i = 0; i < n_rows; ++i, walk.next())
            rows[i] = walk.row();
        for (std::uint32_t i = 0; i < n; ++i)
            for (std::uint32_t j = 0; j < N; ++j)
                weights[i][j] = probs[std::size_t{g0 + j} * a.n_ctx + p0 + i];
        for (std::uint32_t c0 = 0; c0 < a.head_dim / 8; c0 += 2) {
            __m256 acc[N][2];
            for (std::uint32_t j = 0; j < N; ++j) {
                const float* o = out + std::size_t{g0 + j} * a.head_dim + 8 * c0;
                acc[j][0] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(o);
                acc[j][1] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(o + 8);
            }
            for (std::uint32_t i = 0; i < n; ++i) {
                if (i + kv_prefetch_ahead < n_rows)
                    prefetch_bytes(Row::at(rows[i + kv_prefetch_ahead], c0), Row::pass_bytes);
                const __m256 v0 = Row::chunk(rows[i], c0);
                const __m256 v1 = Row::chunk(rows[i], c0 + 1);
                for (std::uint32_t j = 0; j < N; ++j) {
                    const __m256 w = _mm256_broadcast_ss(&weights[i][j]);
                    acc[j][0] = _mm256_fmadd_ps(v0, w, acc[j][0]);
                    acc[j][1] = _mm256_fmadd_ps(v1, w, acc[j][1]);
                }
            }
            for (std::uint32_t j = 0; j < N; ++j) {
                float* o = out + std::size_t{g0 + j} * a.head_dim + 8 * c0;
                _mm256_storeu_ps(o, acc[j][0]);
                _mm256_storeu_ps(o + 8, acc[j][1]);
            }
        }
    }
}

template <class Row>
void scores_all(const attention_head_args& a, float* scores) {
    for_head_tiles(a.group, [&](std::uint32_t g0, auto n) { scores_tile<Row, n>(a, g0, scores); });
}

template <class Row>
void values_all(const attention_head_args& a, const float* probs, float* out) {
    for_head_tiles(a.group,
                   [&](std::uint32_t g0, auto n) { values_tile<Row, n>(a, g0, probs, out); });
}

} // namespace

void attention_scores_avx2(const attention_head_args& a, float* scores) {
    scores_all<f16_row>(a, scores);
}
void attention_values_avx2(const attention_head_args& a, const float* probs, float* out) {
    values_all<f16_row>(a, probs, out);
}
void attention_scores_q8_avx2(const attention_head_args& a, float* scores) {
    scores_all<q8_row>(a, scores);
}
void attention_values_q8_avx2(const attention_head_args& a, const float* probs, float* out) {
    values_all<q8_row>(a, probs, out);
}

} // namespace bitnet::kernels::cpu
