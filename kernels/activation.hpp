// The gated FFN activations: z = act(g) ⊙ u, with act = ReLU² (bitnet-b1.58) or SiLU (bitnet,
// llama). ReLU² is relu then square, in float, as ggml_relu + ggml_sqr.
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>

namespace bitnet::kernels {

enum class ffn_activation { relu_sqr, silu };

/// z[i] = act(g[i]) · u[i] for i < n (z may alias g or u exactly), split over n_threads threads
/// (0 = one per core) when n is large. ReLU² runs `family` (lowered to what the CPU has), equal to
/// the scalar loop bit for bit; SiLU is scalar in every family (libm's expf defines it).
void gated_activation(ffn_activation act, const float* g, const float* u, std::size_t n, float* z,
                      int n_threads = 1, isa family = best_isa());

} // namespace bitnet::kernels
