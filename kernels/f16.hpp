// IEEE 754 binary16 and bfloat16 <-> binary32 scalar conversions, bit-exact and header-only, so
// the loaders do not depend on the compiler's _Float16 support or on the FPU rounding mode.
#pragma once

#include <bit>
#include <cstdint>

namespace bitnet::kernels {

/// Widens an IEEE binary16 value to float. Exact for every input (subnormals, ±inf, NaN with
/// its payload in the top mantissa bits).
constexpr float f16_to_f32(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    const std::uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24, exact in float since mant < 2^10.
        const float v = static_cast<float>(mant) * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// Narrows a float to IEEE binary16, rounding to nearest with ties to even (what ggml's
/// F16C/NEON paths and numpy do). Overflow gives ±inf; NaN stays a quiet NaN.
constexpr std::uint16_t f32_to_f16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t exp = (x >> 23) & 0xffu;
    std::uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) {
        if (mant == 0)
            return static_cast<std::uint16_t>(sign | 0x7c00u);
        // Keep the top payload bits and force the quiet bit so the NaN cannot become inf.
        return static_cast<std::uint16_t>(sign | 0x7e00u | (mant >> 13));
    }
    const int e = static_cast<int>(exp) - 127 + 15; // binary16 biased exponent
    if (e >= 31)
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
        // Result is subnormal (or zero): value = mant24 * 2^(e-38) = half * 2^-24.
        if (e < -10)
            return sign; // below half the smallest subnormal (2^-25): rounds to zero
        mant |= 0x800000u;
        const auto shift = static_cast<std::uint32_t>(14 - e); // 14..24
        std::uint32_t half = mant >> shift;
        const std::uint32_t rem = mant & ((1u << shift) - 1u);
        const std::uint32_t mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half & 1u)))
            ++half; // a carry into bit 10 correctly yields the smallest normal
        return static_cast<std::uint16_t>(sign | half);
    }
    std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        ++half; // a carry out of the mantissa bumps the exponent, up to inf: the correct result
    return static_cast<std::uint16_t>(sign | half);
}

/// Widens a bfloat16 (the top half of a binary32) to float. Exact.
constexpr float bf16_to_f32(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

} // namespace bitnet::kernels
