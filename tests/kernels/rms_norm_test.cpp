// RMSNorm (kernels/rms_norm.hpp) against the formula in double.
#include "kernels/rms_norm.hpp"

#include "kernel_test_util.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace bitnet;

TEST_CASE("rms_norm matches x / sqrt(mean(x^2) + eps) * g") {
    const std::size_t n = 2560;
    const std::size_t ld = n + 7;
    const std::size_t n_rows = 3;
    std::vector<float> x = test::random_floats(n_rows * ld, 1, -4.0f, 4.0f);
    for (std::size_t i = 0; i < n; ++i)
        x[2 * ld + i] *= 1e-3f; // a small row, where eps matters
    const std::vector<float> g = test::random_floats(n, 2, 0.5f, 1.5f);
    const float eps = 1e-5f;
    std::vector<float> y(n_rows * ld, -1.0f);
    kernels::rms_norm(x.data(), g.data(), n_rows, n, ld, eps, y.data());
    for (std::size_t r = 0; r < n_rows; ++r) {
        double ss = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            ss += static_cast<double>(x[r * ld + i]) * x[r * ld + i];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
        for (std::size_t i = 0; i < n; ++i) {
            const double want = x[r * ld + i] * inv * g[i];
            CHECK(std::fabs(y[r * ld + i] - want) <= 1e-5 * std::fabs(want) + 1e-7);
        }
        CHECK(y[r * ld + n] == -1.0f); // the stride gap is left alone
    }
}

TEST_CASE("rms_norm may run in place") {
    const std::size_t n = 64;
    std::vector<float> x = test::random_floats(n, 3, -1.0f, 1.0f);
    const std::vector<float> g(n, 1.0f);
    std::vector<float> out(n);
    kernels::rms_norm(x.data(), g.data(), 1, n, n, 1e-6f, out.data());
    kernels::rms_norm(x.data(), g.data(), 1, n, n, 1e-6f, x.data());
    CHECK(x == out);
}
