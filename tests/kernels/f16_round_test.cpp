// The F16C rounding equals the scalar f16_to_f32(f32_to_f16(x)) bit for bit: a stride through every
// float bit pattern (NaN payloads, infinities, F16 overflow and subnormals), every float around
// F16's subnormal and overflow edges, and each tail length.
#include "kernels/f16_round.hpp"

#include "kernel_test_util.hpp"
#include "kernels/f16.hpp"

#include <bit>

using namespace bitnet;
using namespace bitnet::test;

namespace {

long first_rounding_difference(const std::vector<float>& x) {
    std::vector<float> y(x.size());
    kernels::round_to_f16(x.data(), y.data(), x.size(), kernels::isa::avx2);
    std::vector<float> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        want[i] = kernels::f16_to_f32(kernels::f32_to_f16(x[i]));
    return first_bit_difference(want, y);
}

} // namespace

TEST_CASE("kernels: F16C rounding to F16 equals the scalar conversion") {
    if (!family_runs_here(kernels::isa::avx2))
        return;
    CHECK(first_rounding_difference(float_patterns(0, 0xffffffffu, 4093)) == -1);
    // F16's smallest subnormal is 2^-24 (float exponent 103), its largest finite 65504: every
    // 61st float from 2^-26 to 2^-13 and from 2^15 to 2^17, both signs (ties included: the
    // stride is odd, so it meets every residue of the rounding's 13 dropped bits).
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
        CHECK(first_rounding_difference(
                  float_patterns(sign | 0x32800000u, sign | 0x39000000u, 61)) == -1);
        CHECK(first_rounding_difference(
                  float_patterns(sign | 0x47000000u, sign | 0x48000000u, 61)) == -1);
    }
    for (std::size_t n = 1; n <= 17; ++n) {
        CAPTURE(n);
        CHECK(first_rounding_difference(
                  random_floats(n, static_cast<std::uint32_t>(n), -7e4f, 7e4f)) == -1);
    }
}
