// The opt-in int8 logits product (engine_options::q8_logits). The logits matrix is quantized once
// at load, row by row (absmax / 127, round half to even), and multiplied with the per-token int8
// activations of kernels/ternary_matmul.hpp:
//
//     y[t][m] = (float)(Σ_k w8[m][k] · q[t][k]) / act_scale[t] · row_scale[m]
//
// It reads half the bytes of the F16 product (the logits matrix is the largest tensor of a BitNet
// model: 656 MB of the 2B-4T's 1.18 GB per decode token) at the cost of quantizing both sides; the
// accuracy loss is measured in tests/engine and bench/RESULTS.md. The integer sums are exact, so
// every family gives the same bits.
#pragma once

#include "kernels/aligned_buffer.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/ternary_matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {

struct packed_q8 {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0; ///< a multiple of 64
    std::vector<float> row_scale;
    /// Σ_k w8[m][k]: the VNNI family feeds activations as unsigned (q + 128) and takes
    /// 128 · row_sum back out.
    std::vector<std::int32_t> row_sum;
    isa family = isa::scalar;
    aligned_buffer data; ///< int8 [rows][cols]
};

/// Quantizes an F16 matrix [rows][cols] row by row. cols must be a multiple of 64 (checked by the
/// caller; every BitNet n_embd is).
[[nodiscard]] packed_q8 pack_q8_rows(const std::uint16_t* f16, std::uint32_t rows,
                                     std::uint32_t cols, isa family = best_isa());

/// y[t][m] for t < acts.n_rows, m < w.rows (row t of y at y + t·ldy); acts.k == w.cols. Rows split
/// over n_threads threads.
void q8_matmul(const packed_q8& w, const quantized_acts& acts, float* y, std::size_t ldy,
               int n_threads);

} // namespace bitnet::kernels
