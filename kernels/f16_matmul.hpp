// The F16 matrix product of the tied logits (docs/GGUF-FORMAT.md §3.4 step 4): each activation row
// is rounded to F16, dotted with F16 weight rows, accumulated in float. Used for logits only, where
// the weight (the token embedding) is the largest tensor of the model.
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels {

/// Lanes of the fixed summation order of every f16_matmul family.
inline constexpr std::size_t f16_dot_lanes = 16;

/// y[t][m] = Σ_k f16(x[t][k]) · w[m][k] for t < n_tok, m < rows. w is [rows][cols] F16 bits,
/// x is [n_tok] rows of cols floats (stride ldx), y rows have stride ldy. Rows of w are split
/// over n_threads threads (0 = one per core).
///
/// The sum is defined, for every family, as 16 partial sums: lane l accumulates the products of
/// columns k ≡ l (mod 16) in increasing k with a fused multiply-add (one rounding each), then the
/// lanes are folded by halves, lane i += lane i + w for w = 8, 4, 2, 1. That is one 16-lane
/// AVX-512 register or two 8-lane AVX2 registers, so all families agree bit for bit. A family the
/// CPU lacks is lowered (best_isa_up_to).
void f16_matmul(const std::uint16_t* w, std::size_t rows, std::size_t cols, const float* x,
                std::size_t n_tok, std::size_t ldx, float* y, std::size_t ldy, int n_threads,
                isa family = best_isa());

} // namespace bitnet::kernels
