#include "kernels/rms_norm.hpp"

#include "kernels/parallel.hpp"

#include <cmath>

namespace bitnet::kernels {
namespace {

// Σ x² is one double-precision chain per row, in column order (the bits depend on that order), so
// a row alone is bound by the latency of its adds. Four rows' chains run side by side instead,
// each still in its own order.
constexpr std::size_t rows_together = 4;

void finish_row(const float* xr, const float* g, std::size_t n, float eps, double sum, float* yr) {
    const double mean = sum / static_cast<double>(n);
    const float scale = 1.0f / std::sqrt(static_cast<float>(mean + eps));
    for (std::size_t i = 0; i < n; ++i)
        yr[i] = (xr[i] * scale) * g[i];
}

void rows(const float* x, const float* g, std::size_t r0, std::size_t r1, std::size_t n,
          std::size_t ld, float eps, float* y) {
    std::size_t r = r0;
    for (; r + rows_together <= r1; r += rows_together) {
        double sum[rows_together] = {};
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < rows_together; ++j) {
                const float v = x[(r + j) * ld + i];
                sum[j] += static_cast<double>(v * v);
            }
        for (std::size_t j = 0; j < rows_together; ++j)
            finish_row(x + (r + j) * ld, g, n, eps, sum[j], y + (r + j) * ld);
    }
    for (; r < r1; ++r) {
        const float* xr = x + r * ld;
        double sum = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            sum += static_cast<double>(xr[i] * xr[i]);
        finish_row(xr, g, n, eps, sum, y + r * ld);
    }
}

} // namespace

void rms_norm(const float* x, const float* g, std::size_t n_rows, std::size_t n, std::size_t ld,
              float eps, float* y, int n_threads) {
    const int threads = n_rows * n < row_parallel_from ? 1 : n_threads;
    parallel_ranges(n_rows, 1, threads,
                    [&](std::size_t r0, std::size_t r1) { rows(x, g, r0, r1, n, ld, eps, y); });
}

} // namespace bitnet::kernels
