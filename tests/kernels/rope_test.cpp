// RoPE (kernels/rope.hpp) against the rotation written in double, for both pair layouts.
#include "kernels/rope.hpp"

#include "kernel_test_util.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace bitnet;
using namespace bitnet::kernels;

namespace {

// Angle of pair i at position pos: pos · base^(−2i/d), the closed form of ggml's iteration.
double angle(std::uint32_t pos, std::uint32_t i, std::uint32_t d, double base) {
    return pos * std::pow(base, -2.0 * i / d);
}

} // namespace

TEST_CASE("rope_apply rotates each pair by pos * base^(-2i/d)") {
    const std::uint32_t head_dim = 128;
    const std::uint32_t n_heads = 3;
    const float base = 500000.0f;
    for (const rope_style style : {rope_style::neox, rope_style::norm}) {
        for (const std::uint32_t pos : {0u, 1u, 17u, 300u}) {
            CAPTURE(pos);
            const std::vector<float> x0 =
                test::random_floats(n_heads * head_dim, pos + 1, -2.0f, 2.0f);
            std::vector<float> x = x0;
            rope_angles a;
            rope_angles_for(pos, head_dim, base, nullptr, a);
            rope_apply(x.data(), n_heads, head_dim, style, a);
            // The float iteration drifts from the closed form by a few ulps per step of theta.
            const double tol = 1e-5 * (1.0 + pos);
            for (std::uint32_t h = 0; h < n_heads; ++h)
                for (std::uint32_t i = 0; i < head_dim / 2; ++i) {
                    const std::uint32_t i0 = style == rope_style::neox ? i : 2 * i;
                    const std::uint32_t i1 =
                        style == rope_style::neox ? i + head_dim / 2 : 2 * i + 1;
                    const double th = angle(pos, i, head_dim, base);
                    const double u = x0[h * head_dim + i0];
                    const double v = x0[h * head_dim + i1];
                    CHECK(std::fabs(x[h * head_dim + i0] - (u * std::cos(th) - v * std::sin(th))) <=
                          tol);
                    CHECK(std::fabs(x[h * head_dim + i1] - (u * std::sin(th) + v * std::cos(th))) <=
                          tol);
                }
        }
    }
}

TEST_CASE("rope frequency factors divide the angles") {
    const std::uint32_t head_dim = 8;
    const std::vector<float> factors = {1.0f, 2.0f, 4.0f, 8.0f};
    rope_angles plain;
    rope_angles scaled;
    rope_angles_for(10, head_dim, 10000.0f, nullptr, plain);
    rope_angles_for(10, head_dim, 10000.0f, factors.data(), scaled);
    for (std::uint32_t i = 0; i < head_dim / 2; ++i) {
        const double th = angle(10, i, head_dim, 10000.0) / factors[i];
        CHECK(std::fabs(scaled.cos[i] - std::cos(th)) <= 1e-5);
        CHECK(std::fabs(scaled.sin[i] - std::sin(th)) <= 1e-5);
    }
    CHECK(plain.cos[1] != scaled.cos[1]);
}
