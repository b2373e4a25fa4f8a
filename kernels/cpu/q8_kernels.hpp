// Entry points of the per-ISA Q8_0 logits translation units (kernels/cpu/q8_matmul_*.cpp), called
// only by q8_matmul.cpp after a CPUID check. Plain pointers only (see isa_kernels.hpp for why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels::cpu {

/// y[t][m] for m in [row_begin, row_end), t < n_tok, in the summation order of q8_0_matmul.
struct q8_0_args {
    const std::int8_t* w = nullptr;         ///< [rows][k]
    const std::uint16_t* w_scale = nullptr; ///< F16 bits [rows][k / 32]
    std::size_t k = 0;                      ///< a multiple of 32
    const std::int8_t* q = nullptr;         ///< [n_tok][k]
    const float* q_scale = nullptr;         ///< [n_tok][k / 32]
    std::size_t n_tok = 0;
    float* y = nullptr; ///< row t at y + t·ldy
    std::size_t ldy = 0;
    std::size_t row_begin = 0;
    std::size_t row_end = 0;
    /// The VNNI family's input: q + 128 as unsigned bytes (q ^ 0x80), [n_tok][k], made by the
    /// caller once per product.
    const std::uint8_t* q_unsigned = nullptr;
};

void q8_0_rows_avx2(const q8_0_args& a);
void q8_0_rows_avx512(const q8_0_args& a);

} // namespace bitnet::kernels::cpu
