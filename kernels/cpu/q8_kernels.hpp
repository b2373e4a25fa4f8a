// Entry points of the per-ISA int8 logits translation units (kernels/cpu/q8_matmul_*.cpp), called
// only by q8_matmul.cpp after a CPUID check. Plain pointers only (see isa_kernels.hpp for why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels::cpu {

/// Exact integer dots d[t][m - row_begin] = Σ_k w8[m][k] · q[t][k] for m in [row_begin, row_end).
struct q8_args {
    const std::int8_t* w = nullptr; ///< [rows][k]
    const std::int32_t* row_sum = nullptr;
    std::size_t k = 0;              ///< a multiple of 64
    const std::int8_t* q = nullptr; ///< [n_tok][k]
    std::size_t n_tok = 0;
    std::size_t row_begin = 0;
    std::size_t row_end = 0;
    std::int32_t* dots = nullptr; ///< [n_tok][row_end - row_begin]
    /// The VNNI family's input: q + 128 as unsigned bytes, [n_tok][k], made by the caller.
    const std::uint8_t* q_unsigned = nullptr;
};

void q8_dots_avx2(const q8_args& a);
void q8_dots_avx512(const q8_args& a);

} // namespace bitnet::kernels::cpu
