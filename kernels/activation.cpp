#include "kernels/activation.hpp"

#include <cmath>

namespace bitnet::kernels {

void gated_activation(ffn_activation act, const float* g, const float* u, std::size_t n, float* z) {
    if (act == ffn_activation::relu_sqr) {
        for (std::size_t i = 0; i < n; ++i) {
            const float r = g[i] > 0.0f ? g[i] : 0.0f;
            z[i] = (r * r) * u[i];
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i)
        z[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

} // namespace bitnet::kernels
