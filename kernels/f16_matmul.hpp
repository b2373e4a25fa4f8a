// The F16 matrix product of the tied logits (spec §3.4 step 4): each activation row is rounded to
// F16, dotted with F16 weight rows, accumulated in float. Used for logits only, where the weight
// (the token embedding) is the largest tensor of the model.
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels {

/// y[t][m] = Σ_k f16(x[t][k]) · w[m][k] for t < n_tok, m < rows. w is [rows][cols] F16 bits,
/// x is [n_tok] rows of cols floats (stride ldx), y rows have stride ldy. Rows of w are split
/// over n_threads threads (0 = one per core).
void f16_matmul(const std::uint16_t* w, std::size_t rows, std::size_t cols, const float* x,
                std::size_t n_tok, std::size_t ldx, float* y, std::size_t ldy, int n_threads,
                isa family = best_isa());

} // namespace bitnet::kernels
