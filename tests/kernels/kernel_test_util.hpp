// Shared pieces of the kernel tests: deterministic random data, the SIMD families to compare with
// their scalar twins, and bitwise comparison of float arrays.
#pragma once

#include "kernels/cpu_features.hpp"
#include "kernels/f16.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace bitnet::test {

inline constexpr std::array<kernels::isa, 2> simd_families = {kernels::isa::avx2,
                                                              kernels::isa::avx512_vnni};

/// False (with a doctest message) when this CPU cannot run `family`, so the caller skips it.
inline bool family_runs_here(kernels::isa family) {
    if (kernels::isa_supported(family))
        return true;
    MESSAGE("skipping " << std::string(kernels::isa_name(family)) << ": not supported by this CPU");
    return false;
}

/// Index of the first element whose bits differ, or -1 when the arrays are bitwise equal (NaNs
/// included, -0 distinguished from +0).
inline long first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size())
        return 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return static_cast<long>(i);
    return -1;
}

/// The floats whose bit patterns are from, from + stride, ... up to `to` (inclusive).
inline std::vector<float> float_patterns(std::uint64_t from, std::uint64_t to,
                                         std::uint64_t stride) {
    std::vector<float> x;
    for (std::uint64_t b = from; b <= to; b += stride) {
        const auto bits = static_cast<std::uint32_t>(b);
        float f = 0.0f;
        std::memcpy(&f, &bits, sizeof f);
        x.push_back(f);
    }
    return x;
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

/// n values uniform in [-1.5, 1.5], as F16 bits.
inline std::vector<std::uint16_t> random_f16(std::size_t n, std::uint32_t seed) {
    const auto f = random_floats(n, seed, -1.5f, 1.5f);
    std::vector<std::uint16_t> h(n);
    for (std::size_t i = 0; i < n; ++i)
        h[i] = kernels::f32_to_f16(f[i]);
    return h;
}

} // namespace bitnet::test
