#include "kernels/rms_norm.hpp"

#include "kernels/parallel.hpp"

#include <cmath>

namespace bitnet::kernels {
namespace {

void rows(const float* x, const float* g, std::size_t r0, std::size_t r1, std::size_t n,
          std::size_t ld, float eps, float* y) {
    for (std::size_t r = r0; r < r1; ++r) {
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

// Below this many values one thread is faster than waking the others (a decode step's rows).
constexpr std::size_t parallel_from = 1u << 15;

} // namespace

void rms_norm(const float* x, const float* g, std::size_t n_rows, std::size_t n, std::size_t ld,
              float eps, float* y, int n_threads) {
    const int threads = n_rows * n < parallel_from ? 1 : n_threads;
    parallel_ranges(n_rows, 1, threads,
                    [&](std::size_t r0, std::size_t r1) { rows(x, g, r0, r1, n, ld, eps, y); });
}

} // namespace bitnet::kernels
