// The opt-in Q8_0 logits product (engine_options::q8_logits). The logits matrix is quantized once
// at load into GGUF's Q8_0 blocks: 32 consecutive values of a row share one F16 scale
// d = absmax / 127 and are stored as round(x / d) in [-127, 127] (the bytes of ggml's
// quantize_row_q8_0_ref). The activations are quantized the same way, 32 values per block, as ggml
// does for its Q8_0 × Q8_0 dot product: one scale per block instead of one per token keeps an
// outlier from flattening the rest of the row. Then
//
//     y[t][m] = Σ_b  d_w[m][b] · d_a[t][b] · Σ_{k in block b} w8[m][k] · q[t][k]
//
// summed in the one order described at q8_0_matmul. It reads 34 bytes per 32 values instead of the
// F16 product's 64 (the logits matrix is the largest tensor of a BitNet model: 656 MB of the
// 2B-4T's 1.18 GB per decode token in F16, 349 MB in Q8_0). The accuracy is measured in
// tests/engine and bench/RESULTS.md.
#pragma once

#include "kernels/aligned_buffer.hpp"
#include "kernels/cpu_features.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {

/// Values per Q8_0 block (ggml's QK8_0).
inline constexpr std::size_t q8_0_block = 32;

/// A matrix [rows][cols] in Q8_0 blocks: the values and scales of GGUF's Q8_0 blocks (34 bytes per
/// 32 values), rearranged for the kernels. Scales are kept apart, F16 [rows][cols / 32] in block
/// order. A row's values come in groups of 16 blocks (512 values; the last group of a row holds
/// the G = cols / 32 mod 16 blocks left, if any): a group is 8 vectors of G 4-byte words, word l of
/// vector v being values 4v..4v+3 of the group's block l. So one 64-byte load holds the same four
/// values of 16 blocks, and vpdpbusd sums each block's products into a lane of its own.
struct packed_q8_0 {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0; ///< a multiple of q8_0_block
    isa family = isa::scalar;
    aligned_buffer values; ///< int8 [rows][cols], each row as q8_0_value_offset says
    aligned_buffer scales; ///< F16 bits [rows][cols / 32]

    /// What one product reads of the matrix: values and scales.
    [[nodiscard]] std::uint64_t bytes() const noexcept { return values.size() + scales.size(); }
};

/// Where value k of a row lies among the row's cols bytes of packed_q8_0::values.
[[nodiscard]] std::size_t q8_0_value_offset(std::size_t k, std::size_t cols) noexcept;

/// Activations of n_rows tokens in Q8_0 blocks. The scales stay floats: they are never stored, so
/// rounding them to F16 as ggml does would only lose accuracy.
struct q8_0_acts {
    std::size_t n_rows = 0;
    std::size_t k = 0;
    std::vector<std::int8_t> q; ///< [n_rows][k], in natural order
    std::vector<float> scale;   ///< [n_rows][k / 32]
};

/// Quantizes an F16 matrix [rows][cols] into Q8_0 blocks (ggml's quantize_row_q8_0_ref: d =
/// absmax / 127, values rounded half away from zero with 1 / d, d stored as F16). cols must be a
/// multiple of 32 (checked by the caller; every BitNet n_embd is). Uses one thread per core. A
/// family the CPU lacks is lowered (best_isa_up_to); the layout is the same for every family.
[[nodiscard]] packed_q8_0 pack_q8_0(const std::uint16_t* f16, std::uint32_t rows,
                                    std::uint32_t cols, isa family = best_isa());

/// Quantizes each row of x ([n_rows] rows of k floats, stride ldx) into Q8_0 blocks the same way,
/// keeping the float scale. k must be a multiple of 32. One definition for every family.
void quantize_q8_0(const float* x, std::size_t n_rows, std::size_t k, std::size_t ldx,
                   q8_0_acts& out);

/// Lanes of the fixed summation order of every q8_0_matmul family.
inline constexpr std::size_t q8_0_dot_lanes = 16;

/// Blocks per group of the packed layout (one block per lane).
inline constexpr std::size_t q8_0_group_blocks = q8_0_dot_lanes;

/// y[t][m] for t < acts.n_rows and m < w.rows (row t of y at y + t·ldy); acts.k must equal w.cols.
/// Rows are split over n_threads threads (0 = one per core).
///
/// The sum is defined, for every family, as 16 partial sums: block b's exact integer dot product
/// (Σ over its 32 values of w8 · q) is added to lane b mod 16 as acc = fma(float(dot), s_b, acc)
/// with s_b = float(d_w[b]) · d_a[b] rounded to float, blocks in increasing b; then the lanes are
/// folded by halves, lane i += lane i + w for w = 8, 4, 2, 1. That is one 16-lane AVX-512 register
/// or two 8-lane AVX2 registers per (row, token), so every family gives the same bits.
void q8_0_matmul(const packed_q8_0& w, const q8_0_acts& acts, float* y, std::size_t ldy,
                 int n_threads);

/// As q8_0_matmul, with kernel family `family` instead of the one the weights were packed for
/// (the layout is the same for every family; a family the CPU lacks is lowered).
void q8_0_matmul(const packed_q8_0& w, const q8_0_acts& acts, float* y, std::size_t ldy,
                 int n_threads, isa family);

} // namespace bitnet::kernels
