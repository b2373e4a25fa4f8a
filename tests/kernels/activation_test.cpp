// The gated FFN activation: every SIMD family of ReLU² against its scalar twin, bit for bit, on
// ragged lengths, in place, with the values where a careless max(g, 0) would differ (NaN, −0,
// infinities, subnormals), and split over threads.
#include "kernels/activation.hpp"

#include "kernel_test_util.hpp"

#include <cmath>
#include <limits>

using namespace bitnet;
using namespace bitnet::test;
using kernels::ffn_activation;
using kernels::isa;

namespace {

std::vector<float> gate_values(std::size_t n, std::uint32_t seed) {
    auto g = random_floats(n, seed, -4.0f, 4.0f);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(),
                              -0.0f,
                              0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(),
                              -std::numeric_limits<float>::denorm_min(),
                              1e20f};
    for (std::size_t i = 0; i < n; i += 5)
        g[i] = specials[(i / 5) % std::size(specials)];
    return g;
}

} // namespace

TEST_CASE("gated activation: ReLU² of every SIMD family equals the scalar twin bit for bit") {
    for (isa f : simd_families) {
        if (!family_runs_here(f))
            continue;
        for (std::size_t n : {0u, 1u, 7u, 8u, 15u, 16u, 17u, 31u, 33u, 100u, 6912u}) {
            CAPTURE(std::string(kernels::isa_name(f)));
            CAPTURE(n);
            const auto g = gate_values(n, static_cast<std::uint32_t>(n) + 1);
            auto u = random_floats(n, static_cast<std::uint32_t>(n) + 99, -3.0f, 3.0f);
            for (std::size_t i = 3; i < n; i += 11)
                u[i] = i % 2 ? -0.0f : std::numeric_limits<float>::infinity();
            std::vector<float> want(n), got(n);
            kernels::gated_activation(ffn_activation::relu_sqr, g.data(), u.data(), n, want.data(),
                                      1, isa::scalar);
            kernels::gated_activation(ffn_activation::relu_sqr, g.data(), u.data(), n, got.data(),
                                      1, f);
            CHECK(first_bit_difference(want, got) == -1);
            // In place, over the gate (as the engine calls it) and over the up projection.
            auto in_g = g;
            kernels::gated_activation(ffn_activation::relu_sqr, in_g.data(), u.data(), n,
                                      in_g.data(), 1, f);
            CHECK(first_bit_difference(want, in_g) == -1);
            auto in_u = u;
            kernels::gated_activation(ffn_activation::relu_sqr, g.data(), in_u.data(), n,
                                      in_u.data(), 1, f);
            CHECK(first_bit_difference(want, in_u) == -1);
        }
    }
}

TEST_CASE("gated activation: ReLU² is relu then square then the up value, in float") {
    const std::vector<float> g{2.0f, -2.0f, 0.5f, std::numeric_limits<float>::quiet_NaN(), -0.0f};
    const std::vector<float> u{3.0f, -3.0f, -1.0f, 5.0f, 7.0f};
    std::vector<float> z(g.size());
    kernels::gated_activation(ffn_activation::relu_sqr, g.data(), u.data(), g.size(), z.data());
    CHECK(z[0] == 12.0f);
    CHECK(z[1] == 0.0f);
    CHECK(std::signbit(z[1])); // 0 · −3 is −0, in the scalar twin too
    CHECK(z[2] == -0.25f);
    CHECK(z[3] == 0.0f); // a NaN gate is not positive: relu gives 0
    CHECK(z[4] == 0.0f);
}

TEST_CASE("gated activation: split over threads, both activations give the one-thread result") {
    const std::size_t n = (1u << 17) + 77; // above the size where threads are used
    const auto g = gate_values(n, 5);
    const auto u = random_floats(n, 6, -2.0f, 2.0f);
    for (ffn_activation act : {ffn_activation::relu_sqr, ffn_activation::silu}) {
        std::vector<float> one(n), two(n);
        kernels::gated_activation(act, g.data(), u.data(), n, one.data(), 1);
        kernels::gated_activation(act, g.data(), u.data(), n, two.data(), 2);
        CHECK(first_bit_difference(one, two) == -1);
    }
}
