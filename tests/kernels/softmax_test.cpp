// The vector softmax and its expf equal the scalar twin (std::exp, whose bits are libm's) bit for
// bit: the expf over strides through every float and densely through softmax's input range, the
// softmax over ragged rows with underflowing, infinite and NaN scores, in tiles of 1 to 4 rows.
#include "kernels/softmax.hpp"

#include "kernel_test_util.hpp"

#include <bit>
#include <cmath>
#include <limits>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// Index of the first input whose vector expf differs from std::exp, or -1.
long first_expf_difference(const std::vector<float>& x) {
    std::vector<float> y(x.size());
    kernels::expf_rows(x.data(), y.data(), x.size(), kernels::isa::avx2);
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::bit_cast<std::uint32_t>(y[i]) != std::bit_cast<std::uint32_t>(std::exp(x[i])))
            return static_cast<long>(i);
    return -1;
}

} // namespace

TEST_CASE("kernels: the vector expf equals libm's expf bit for bit") {
    if (!family_runs_here(kernels::isa::avx2))
        return;
    struct range {
        const char* what;
        std::vector<float> x;
    };
    const range ranges[] = {
        {"every 9973rd bit pattern (NaNs, infinities, subnormals)",
         float_patterns(0, 0xffffffffu, 9973)},
        {"[-1, -0], every 1021st float", float_patterns(0x80000000u, 0xbf800000u, 1021)},
        {"[-104, -1], every 211th float", float_patterns(0xbf800000u, 0xc2d00000u, 211)},
        {"[-0x1.a0p6, -0x1.9cp6], where results are subnormal or flushed, every float",
         float_patterns(0xc2ce0000u, 0xc2d00000u, 1)},
        {"[88, 89], every float (the overflow edge)", float_patterns(0x42b00000u, 0x42b20000u, 1)},
        {"[0, 1], every 1021st float", float_patterns(0, 0x3f800000u, 1021)},
    };
    for (const range& r : ranges) {
        CAPTURE(r.what);
        const long at = first_expf_difference(r.x);
        if (at >= 0)
            CAPTURE(r.x[static_cast<std::size_t>(at)]);
        CHECK(at == -1);
    }
    // The two inputs (of all 2^32, bench/check_expf) where glibc's algorithm without its fused
    // multiply-adds rounds differently: a port that lost a fusion fails here.
    CHECK(first_expf_difference(
              {std::bit_cast<float>(0xc27c65d9u), std::bit_cast<float>(0x4202422fu)}) == -1);
    // A lane order mix-up would pass the ranges above whenever neighbours agree: distinct values
    // in every lane, with a tail of each length.
    for (std::size_t n = 1; n <= 19; ++n) {
        CAPTURE(n);
        CHECK(first_expf_difference(random_floats(n, static_cast<std::uint32_t>(n), -110, 90)) ==
              -1);
    }
    // What production relies on: the process-wide comparison picked the vector expf.
    CHECK(kernels::vector_expf_matches_libm());
}

TEST_CASE("kernels: the vector softmax equals the scalar twin on ragged rows") {
    if (!family_runs_here(kernels::isa::avx2))
        return;
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::uint32_t seed = 1;
    for (const std::size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 100, 513}) {
        for (std::size_t rows = 1; rows <= 6; ++rows) {
            for (const float spread : {4.0f, 300.0f}) {
                for (const bool round : {false, true}) {
                    CAPTURE(n);
                    CAPTURE(rows);
                    CAPTURE(spread);
                    CAPTURE(round);
                    auto s = random_floats(rows * n, ++seed, -spread, spread / 4);
                    // Scores that only a careful port keeps: a -inf (masked), equal maxima, and
                    // values far enough below the max that expf underflows to 0 or a subnormal.
                    s[seed % s.size()] = -inf;
                    if (n > 2)
                        s[1] = s[2];
                    auto scalar = s;
                    auto vector = s;
                    kernels::softmax_rows(scalar.data(), rows, n, round, kernels::isa::scalar);
                    kernels::softmax_rows(vector.data(), rows, n, round, kernels::isa::avx2);
                    CHECK(first_bit_difference(scalar, vector) == -1);
                }
            }
        }
    }
    SUBCASE("rows holding +inf or NaN give NaN where the scalar twin does") {
        for (const float bad : {inf, nan}) {
            auto s = random_floats(3 * 20, 7, -3, 3);
            s[25] = bad; // row 1
            auto scalar = s;
            auto vector = s;
            kernels::softmax_rows(scalar.data(), 3, 20, false, kernels::isa::scalar);
            kernels::softmax_rows(vector.data(), 3, 20, false, kernels::isa::avx2);
            for (std::size_t i = 0; i < s.size(); ++i) {
                CAPTURE(i);
                CHECK(std::isnan(scalar[i]) == std::isnan(vector[i]));
                if (!std::isnan(scalar[i]))
                    CHECK(std::bit_cast<std::uint32_t>(scalar[i]) ==
                          std::bit_cast<std::uint32_t>(vector[i]));
            }
            CHECK(std::isnan(vector[20])); // the bad row is NaN throughout...
            CHECK(!std::isnan(vector[0])); // ... and the rows beside it are not
            CHECK(!std::isnan(vector[40]));
        }
    }
}
