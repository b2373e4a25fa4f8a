// RMSNorm as ggml computes it (docs/GGUF-FORMAT.md §3.4): Σ x² of float products summed in double,
// then scale = 1 / sqrtf(mean + eps) in float, y = (x · scale) ⊙ g.
#pragma once

#include <cstddef>

namespace bitnet::kernels {

/// Normalises n_rows rows of n floats (x and y row stride ld; y may alias x). g has n entries.
/// Rows are independent: with n_threads > 1 a prefill's rows are split over the compute threads
/// (kernels/parallel.hpp), each row computed as with one thread.
void rms_norm(const float* x, const float* g, std::size_t n_rows, std::size_t n, std::size_t ld,
              float eps, float* y, int n_threads = 1);

} // namespace bitnet::kernels
