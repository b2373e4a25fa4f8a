// The GPU's layout of a ternary weight matrix, made once at load from I2_S (docs/GGUF-FORMAT.md
// §2.2) on the host.
//
// Why this layout: the decode GEMV reads every weight once per token and does almost nothing with
// it, so its speed is the memory bandwidth divided by the bytes it reads. The layout therefore
// keeps 2 bits per weight (I2_S's density: rows · cols / 4 bytes, no expansion to int8, which
// would read 4x the bytes), and only changes which bits hold which column so that
//   - each row is one contiguous run of cols / 4 bytes, so the 32 lanes of a warp reading 32
//     consecutive 32-bit words of a row make one 128-byte transaction (I2_S is contiguous too, but
//     its 128-column blocks spread four columns p, 32+p, 64+p, 96+p over one byte, which does not
//     line up with the 4 consecutive int8 activations a dp4a consumes);
//   - one 32-bit word holds 16 consecutive columns 16j .. 16j+15 of row m, and its byte i holds,
//     at bits 2g+1..2g, the code of column 16j + 4g + i. Then (word >> 2g) & 0x03030303 is four
//     bytes holding the codes of columns 16j+4g .. 16j+4g+3 in byte order, exactly the int32 a
//     dp4a pairs with the 4 int8 activations q[16j+4g .. 16j+4g+3]; adding 0x7f7f7f7f and
//     flipping the top bits (^ 0x80808080) turns codes {0, 1, 2} into int8 {-1, 0, +1} with no
//     carry between bytes (decode_group below): three ALU operations and one dp4a per 4 weights.
// Codes are w + 1 ∈ {0, 1, 2}; code 3 (never written by bitnet.cpp, read as 0 there) is stored as
// 1, as the CPU's layouts do. The 16 activations one word needs are 16 consecutive bytes of q, one
// 128-bit load.
#pragma once

#include "kernels/cuda/grid.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels::cuda {

/// Columns per 32-bit word of the layout.
inline constexpr std::uint32_t ternary_gpu_word_cols = 16;

/// Bytes of the layout for a [rows][cols] matrix: rows · cols / 4, as I2_S.
[[nodiscard]] constexpr std::size_t ternary_gpu_bytes(std::uint32_t rows,
                                                      std::uint32_t cols) noexcept {
    return static_cast<std::size_t>(rows) * cols / 4;
}

/// Repacks I2_S codes (the rows · cols / 4 bytes of docs/GGUF-FORMAT.md §2.2; cols a multiple of
/// 128, which the caller checks) into the GPU layout above.
[[nodiscard]] std::vector<std::uint8_t> pack_ternary_gpu(const std::uint8_t* i2s,
                                                         std::uint32_t rows, std::uint32_t cols);

/// The int8 weights {-1, 0, +1} of columns 16j+4g .. 16j+4g+3, as the int32 a dp4a takes, from
/// word j of a row (g in 0..3).
BITNET_DEVICE std::int32_t decode_group(std::uint32_t word, unsigned g) {
    const std::uint32_t codes = (word >> (2 * g)) & 0x03030303u;
    return static_cast<std::int32_t>((codes + 0x7f7f7f7fu) ^ 0x80808080u);
}

} // namespace bitnet::kernels::cuda
