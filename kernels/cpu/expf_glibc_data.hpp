// The constants of glibc's expf (sysdeps/ieee754/flt-32/e_expf.c and e_exp2f_data.c, unchanged
// since glibc 2.28), as bit patterns: the vector expf (kernels/cpu/softmax_avx2.cpp) and its
// exhaustive check (bench/check_expf.cpp) read the same numbers. Data only, no functions (see
// isa_kernels.hpp for why an ISA file includes nothing more).
#pragma once

#include <cstdint>

namespace bitnet::kernels::cpu::glibc_expf {

/// T[i] = bits(2^(i/32)) − (i << 47): adding ki << 47 puts kd's integer part into the exponent.
alignas(64) inline constexpr std::uint64_t exp2_table[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

inline constexpr std::uint64_t inv_ln2_n = 0x40471547652b82fe; ///< 32 / ln 2 = 0x1.71547652b82fep+5
inline constexpr std::uint64_t shift = 0x4338000000000000;     ///< 0x1.8p52
/// The polynomial 2^(r/32) ≈ C0·r³ + C1·r² + C2·r + 1.
inline constexpr std::uint64_t c0 = 0x3ebc6af84b912394;
inline constexpr std::uint64_t c1 = 0x3f2ebfce50fac4f3;
inline constexpr std::uint64_t c2 = 0x3f962e42ff0c52d6;

/// Float bit patterns of the special ranges' bounds. |x| ≥ 88 takes glibc's special-case branch,
/// which falls back to the main path between the bounds below.
inline constexpr std::uint32_t special_from = 0x42b00000;    ///< 88.0f
inline constexpr std::uint32_t overflow_above = 0x42b17217;  ///< 0x1.62e42ep6: x > it → inf
inline constexpr std::uint32_t underflow_below = 0xc2cff1b4; ///< −0x1.9fe368p6: x < it → 0
inline constexpr std::uint32_t subnormal_below = 0xc2ce8ecf; ///< −0x1.9d1d9ep6: x < it → 0x1p-149

} // namespace bitnet::kernels::cpu::glibc_expf
