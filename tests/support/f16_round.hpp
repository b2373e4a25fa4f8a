// IEEE half-precision conversions for the test oracles (round to nearest even, like F16C and
// ggml's fp32->fp16). Named apart from any model/ helper so the oracle never shares its code.
#pragma once

#include <cstdint>
#include <cstring>

namespace bitnet::test {

/// fp16 bits -> float (exact).
inline float f16_bits_to_f32(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exp == 0x1f) { // inf / NaN
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) { // normal
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant != 0) { // subnormal: renormalise
        exp = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    } else {
        bits = sign;
    }
    float f = 0.0f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

/// float -> fp16 bits, round to nearest even; overflow goes to inf, NaN stays NaN.
inline std::uint16_t f32_to_f16_bits(float f) {
    std::uint32_t x = 0;
    std::memcpy(&x, &f, sizeof x);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) // inf or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) // rounds to >= 65520: inf
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (abs < 0x38800000u) {   // below the smallest normal half (2^-14): subnormal or zero
        if (abs < 0x33000000u) // below half of the smallest subnormal (2^-25): zero
            return sign;
        const std::uint32_t exp = abs >> 23;
        const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126u - exp; // 14..24
        std::uint32_t h = mant >> shift;
        const std::uint32_t rem = mant & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even. A carry
    // out of the mantissa correctly bumps the exponent.
    std::uint32_t h = ((abs - 0x38000000u) >> 13);
    const std::uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        ++h;
    return static_cast<std::uint16_t>(sign | h);
}

/// The float nearest-even rounded through fp16 and back: what an F16 buffer stores.
inline float to_f16_round(float f) {
    return f16_bits_to_f32(f32_to_f16_bits(f));
}

} // namespace bitnet::test
