// RMSNorm (kernels/rms_norm.hpp) against the formula in double.
#include "kernels/rms_norm.hpp"

#include "kernel_test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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

namespace {

// ggml's definition, one row at a time: float squares summed in double, in column order.
std::vector<float> reference_rms_norm(const std::vector<float>& x, const std::vector<float>& g,
                                      std::size_t n_rows, std::size_t n, std::size_t ld,
                                      float eps) {
    std::vector<float> y(x);
    for (std::size_t r = 0; r < n_rows; ++r) {
        double sum = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            sum += static_cast<double>(x[r * ld + i] * x[r * ld + i]);
        const float scale =
            1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n) + eps));
        for (std::size_t i = 0; i < n; ++i)
            y[r * ld + i] = (x[r * ld + i] * scale) * g[i];
    }
    return y;
}

} // namespace

TEST_CASE("rms_norm equals ggml's row-by-row order bit for bit, for any row and thread count") {
    // The kernel sums four rows side by side and splits a prefill's rows over threads; every row
    // must still be its own column-order chain. Row counts around the group of four, widths from
    // one value to the FFN's, and magnitudes that make a reordered double sum round differently.
    for (const std::size_t n :
         {std::size_t{1}, std::size_t{7}, std::size_t{2560}, std::size_t{6912}})
        for (std::size_t n_rows = 1; n_rows <= 9; ++n_rows)
            for (const int threads : {1, 2}) {
                CAPTURE(n);
                CAPTURE(n_rows);
                CAPTURE(threads);
                const std::size_t ld = n + 3;
                std::vector<float> x = test::random_floats(
                    n_rows * ld, static_cast<std::uint32_t>(n + n_rows), -2.0f, 2.0f);
                for (std::size_t i = 0; i < x.size(); i += 5)
                    x[i] *= 3000.0f;
                const std::vector<float> g = test::random_floats(n, 11, 0.5f, 1.5f);
                const std::vector<float> want = reference_rms_norm(x, g, n_rows, n, ld, 1e-6f);
                std::vector<float> y(x);
                kernels::rms_norm(x.data(), g.data(), n_rows, n, ld, 1e-6f, y.data(), threads);
                CHECK(test::first_bit_difference(y, want) == -1);
                kernels::rms_norm(x.data(), g.data(), n_rows, n, ld, 1e-6f, x.data(), threads);
                CHECK(test::first_bit_difference(x, want) == -1);
            }
}

TEST_CASE(
    "rms_norm adds each row's squares in column order: a row where the reverse order differs") {
    // a² + 2^-24 is a float tie that rounds down to a² (a² has an even last bit); the six squares
    // of 2^-27 that follow are each below half a double ulp of that sum, so in column order they
    // vanish, while added first they tip the mean over the tie and the scale onto another float.
    const float a = 0x1.1a7924p+0f;
    std::vector<float> row(8, 0x1p-27f);
    row[0] = a;
    row[1] = 0x1p-12f;
    std::vector<float> reversed(row.rbegin(), row.rend());
    const std::vector<float> g(8, 1.0f);
    const std::vector<float> forward_want = reference_rms_norm(row, g, 1, 8, 8, 0.0f);
    std::vector<float> reverse_sum = reference_rms_norm(reversed, g, 1, 8, 8, 0.0f);
    std::reverse(reverse_sum.begin(), reverse_sum.end());
    REQUIRE(test::first_bit_difference(forward_want, reverse_sum) != -1); // the order shows

    // Alone, and as the third of five rows (inside the kernel's group of four).
    std::vector<float> y(8);
    kernels::rms_norm(row.data(), g.data(), 1, 8, 8, 0.0f, y.data());
    CHECK(test::first_bit_difference(y, forward_want) == -1);
    std::vector<float> five = test::random_floats(5 * 8, 4, -1.0f, 1.0f);
    std::copy(row.begin(), row.end(), five.begin() + 2 * 8);
    std::vector<float> y5(five.size());
    kernels::rms_norm(five.data(), g.data(), 5, 8, 8, 0.0f, y5.data());
    CHECK(test::first_bit_difference(std::vector<float>(y5.begin() + 16, y5.begin() + 24),
                                     forward_want) == -1);
}
