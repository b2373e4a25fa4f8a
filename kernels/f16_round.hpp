// Rounding floats to F16 and back (f16_to_f32(f32_to_f16(x)), round to nearest even), as ggml does
// to an operand before an F16 dot product: attention's query rows and the logits' input. The
// vector family uses F16C's conversions, which give the same bits, NaNs included (both quiet a
// NaN and keep its top payload bits).
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>

namespace bitnet::kernels {

/// y[i] = f16_to_f32(f32_to_f16(x[i])) for i < n; y may alias x exactly.
void round_to_f16(const float* x, float* y, std::size_t n, isa family = best_isa());

} // namespace bitnet::kernels
