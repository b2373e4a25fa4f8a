// Entry points of the per-ISA Q8_0 logits translation units (kernels/cpu/q8_matmul_*.cpp), called
// only by q8_matmul.cpp after a CPUID check. Plain pointers only (see isa_kernels.hpp for why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels::cpu {

/// Rows the AVX-512 family takes at once, at most (the size of its scratch).
inline constexpr std::size_t q8_0_max_block_rows = 4;

/// Scratch of one AVX-512 call, in int32s: per row of a row block and per group, the 16 lanes of
/// -128 · Σ w (see q8_matmul_avx512.cpp).
constexpr std::size_t q8_0_scratch_ints(std::size_t k) noexcept {
    return q8_0_max_block_rows * ((k / 32 + 15) / 16) * 16;
}

/// y[t][m] for m in [row_begin, row_end), t < n_tok, in the summation order of q8_0_matmul. The
/// weights and the activations are both in the packed layout of packed_q8_0.
struct q8_0_args {
    const std::int8_t* w = nullptr;         ///< [rows][k]
    const std::uint16_t* w_scale = nullptr; ///< F16 bits [rows][k / 32]
    std::size_t k = 0;                      ///< a multiple of 32
    /// [n_tok][k]: q for the scalar and AVX2 families; q + 128 as unsigned bytes (q ^ 0x80) for
    /// the VNNI family, which multiplies unsigned by signed bytes.
    const std::uint8_t* q = nullptr;
    const float* q_scale = nullptr; ///< [n_tok][k / 32]
    std::size_t n_tok = 0;
    float* y = nullptr; ///< row t at y + t·ldy
    std::size_t ldy = 0;
    std::size_t row_begin = 0;
    std::size_t row_end = 0;
    std::int32_t* scratch = nullptr; ///< q8_0_scratch_ints(k), owned by the calling thread
};

void q8_0_rows_avx2(const q8_0_args& a);
void q8_0_rows_avx512(const q8_0_args& a);

} // namespace bitnet::kernels::cpu
