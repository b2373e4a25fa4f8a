// BitLinear on the CPU (docs/GGUF-FORMAT.md §3.5, §6): per-token int8 activation quantization and
// the ternary matrix product over M tokens at once,
//
//     y[t][m] = (Σ_k code[m][k] · q[t][k] − Σ_k q[t][k]) / act_scale[t] · w_scale,
//
// with code = w + 1 ∈ {0, 1, 2} and the integer sums exact in int32. Weights are repacked once at
// load (`packed_ternary`): the scalar family keeps bitnet.cpp's I2_S layout as is, and every SIMD
// family reads one shared tiled layout, so weights packed for AVX-512 also run under AVX2 (the
// caller may choose the family per call).
#pragma once

#include "kernels/aligned_buffer.hpp"
#include "kernels/cpu_features.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace bitnet::kernels {

/// Activations of `n_rows` tokens quantized for the ternary product (the work buffer of
/// docs/GGUF-FORMAT.md §6.2): int8 codes [n_rows][k], act_scale = 127 / max(|x|, 1e-5) and Σ q per
/// row.
struct quantized_acts {
    std::size_t n_rows = 0;
    std::size_t k = 0;
    std::vector<std::int8_t> q;
    std::vector<float> scale;
    std::vector<std::int32_t> sum;

    void resize(std::size_t rows, std::size_t cols) {
        n_rows = rows;
        k = cols;
        q.resize(rows * cols);
        scale.resize(rows);
        sum.resize(rows);
    }
};

/// quantize_row_i8_s for each row of x ([n_rows] rows of k floats, row stride ldx): max in double
/// with a 1e-5 floor, scale as float, codes rounded half to even and clamped to [-128, 127].
/// Every family gives the same bytes; a family the CPU lacks is lowered (best_isa_up_to). With
/// n_threads > 1 a prefill's rows are split over the compute threads, each row's bytes unchanged.
void quantize_activations(const float* x, std::size_t n_rows, std::size_t k, std::size_t ldx,
                          quantized_acts& out, isa family = best_isa(), int n_threads = 1);

/// quantize_activations for rows [r0, r1) of x only, into the same rows of `out`, which the caller
/// has sized (out.resize(n_rows, k)): for a caller that already splits a step's rows over the
/// threads and quantizes each chunk's rows after its own per-row work, in one parallel region.
void quantize_activation_rows(const float* x, std::size_t r0, std::size_t r1, std::size_t ldx,
                              quantized_acts& out, isa family = best_isa());

/// A ternary weight matrix [rows][cols] in a kernel family's layout.
struct packed_ternary {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0; ///< K, a multiple of 128
    float scale = 0.0f;     ///< w_scale
    isa family = isa::scalar;
    aligned_buffer data;
};

/// Repacks I2_S codes (docs/GGUF-FORMAT.md §2.2: the rows·cols/4 packed bytes, 128-code blocks of
/// 32 bytes, row r at byte r·cols/4) into `family`'s layout. cols must be a multiple of 128 (the
/// caller checks). A family the CPU lacks is lowered (best_isa_up_to); the result's `family` says
/// which was used. Code 3 (never written by bitnet.cpp) is stored as 0, as bitnet.cpp reads it. The
/// scalar layout is I2_S itself; every SIMD family gets the same bytes: tiles of 64 rows (the last
/// padded with zeros), described in kernels/cpu/isa_kernels.hpp. Packing uses one thread per core.
[[nodiscard]] packed_ternary pack_ternary(const std::uint8_t* i2s_codes, std::uint32_t rows,
                                          std::uint32_t cols, float scale, isa family = best_isa());

/// Rows per weight tile of `family`'s layout: 1 for scalar, 64 for every SIMD family.
[[nodiscard]] std::uint32_t ternary_tile_rows(isa family) noexcept;

/// True when `family` can run weights packed as `w` (same layout, CPU supports it).
[[nodiscard]] bool ternary_runs_on(const packed_ternary& w, isa family) noexcept;

/// y[t][m] for t < acts.n_rows and m < w.rows; row t of y starts at y + t·ldy. acts.k must equal
/// w.cols. Rows of w are split over n_threads threads (0 = one per core) in whole tiles, and the
/// tokens too when the tiles are too few for the threads (detail::token_groups). Runs the
/// family w was packed for, which the CPU must support (pack_ternary guarantees it on this CPU).
/// Every family's y equals the scalar family's bit for bit.
void ternary_matmul(const packed_ternary& w, const quantized_acts& acts, float* y, std::size_t ldy,
                    int n_threads);

/// As ternary_matmul, but with kernel family `family` (ternary_runs_on must hold; otherwise throws
/// std::invalid_argument naming both families).
void ternary_matmul(const packed_ternary& w, const quantized_acts& acts, float* y, std::size_t ldy,
                    int n_threads, isa family);

/// One product of a group: its weights, and where its rows go (y[t][m] at y + t·ldy + m).
struct ternary_product {
    const packed_ternary* w = nullptr;
    float* y = nullptr;
    std::size_t ldy = 0;
};

/// Every product of `group` over the same activations, in one parallel region: the threads split
/// the tiles of all of them together, so a layer's Q, K and V (or gate and up) cost one fork and
/// join instead of three, and the small K and V do not leave a thread idle behind a barrier of
/// their own. Each y equals ternary_matmul's with `family` bit for bit (rows are independent and
/// computed by the same code). Every w must run on `family` and have cols == acts.k.
void ternary_matmul_group(std::span<const ternary_product> group, const quantized_acts& acts,
                          int n_threads, isa family);

namespace detail {
/// Which part of a product one call computes: weight rows [row_begin, row_end) (bounds as given
/// by the caller; families with row tiles handle partial tiles at the end) for activation rows
/// (tokens) [tok_begin, tok_end).
struct rows_part {
    std::uint32_t row_begin = 0, row_end = 0;
    std::size_t tok_begin = 0, tok_end = 0;
};
/// One family's product over a part.
using ternary_rows_fn = void (*)(const packed_ternary& w, const quantized_acts& acts, float* y,
                                 std::size_t ldy, const rows_part& part);
void ternary_rows_scalar(const packed_ternary& w, const quantized_acts& acts, float* y,
                         std::size_t ldy, const rows_part& part);
/// part.row_begin must be a multiple of the family's tile.
void ternary_rows_avx2(const packed_ternary& w, const quantized_acts& acts, float* y,
                       std::size_t ldy, const rows_part& part);
void ternary_rows_avx512(const packed_ternary& w, const quantized_acts& acts, float* y,
                         std::size_t ldy, const rows_part& part);

/// Token groups each weight tile of a product is cut into when `threads` share its `tiles` over
/// `tokens` activation rows: 1 while the tiles share out evenly (within split_loss_tolerated of
/// the mean), else the fewest groups (up to max_token_groups, none under `min_tokens` tokens)
/// whose (tile, group) units share out best.
[[nodiscard]] std::size_t token_groups(std::size_t tiles, std::size_t tokens, int threads,
                                       std::size_t min_tokens) noexcept;
inline constexpr double split_loss_tolerated = 0.02;
inline constexpr std::size_t max_token_groups = 8;
/// The fewest tokens in a group: a part reads its tile again, which costs little beside 16
/// tokens' work; the AVX2 family also unpacks the tile for every part of more than 5 tokens, and
/// gained from a split only from groups of 64 (bench/RESULTS.md, issue 28 part 12).
inline constexpr std::size_t min_split_tokens = 16;
inline constexpr std::size_t min_split_tokens_unpacked = 64;
} // namespace detail

} // namespace bitnet::kernels
