#include "kernels/rms_norm.hpp"

#include <cmath>

namespace bitnet::kernels {

void rms_norm(const float* x, const float* g, std::size_t n_rows, std::size_t n, std::size_t ld,
              float eps, float* y) {
    for (std::size_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * ld;
        float* yr = y + r * ld;
        double sum = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            sum += static_cast<double>(xr[i] * xr[i]);
        const double mean = sum / static_cast<double>(n);
        const float scale = 1.0f / std::sqrt(static_cast<float>(mean + eps));
        for (std::size_t i = 0; i < n; ++i)
            yr[i] = (xr[i] * scale) * g[i];
    }
}

} // namespace bitnet::kernels
