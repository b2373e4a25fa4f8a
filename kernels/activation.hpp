// The gated FFN activations: z = act(g) ⊙ u, with act = ReLU² (bitnet-b1.58) or SiLU (bitnet,
// llama). ReLU² is relu then square, in float, as ggml_relu + ggml_sqr.
#pragma once

#include <cstddef>

namespace bitnet::kernels {

enum class ffn_activation { relu_sqr, silu };

/// z[i] = act(g[i]) · u[i] for i < n (z may alias g or u).
void gated_activation(ffn_activation act, const float* g, const float* u, std::size_t n, float* z);

} // namespace bitnet::kernels
