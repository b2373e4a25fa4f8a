// ggml tensor type ids as bitnet.cpp's fork numbers them (docs/GGUF-FORMAT.md §2.1), and the
// byte-size rule of each type, including the bitnet-specific I2_S/TL1/TL2 sizes with their tail
// scale slot.
#pragma once

#include "common/error.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace bitnet::model {

/// ggml type ids. 36..39 are bitnet.cpp's own (upstream ggml reuses 39 for MXFP4).
enum class ggml_type : std::uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    i2_s = 36,
    i8_s = 37, ///< bitnet.cpp's internal activation type; never valid in a file
    tl1 = 38,
    tl2 = 39,
};

/// "F32", "I2_S", ...; "?" for ids outside the table.
std::string_view ggml_type_name(ggml_type t) noexcept;

/// True when the id names a type a GGUF file may hold (i.e. known and not I8_S).
bool ggml_type_known(std::uint32_t id) noexcept;

/// Up to 4 dimensions, ne[0] fastest-varying; unused dimensions are 1.
using tensor_shape = std::array<std::uint64_t, 4>;

/// Bytes a tensor of this type and shape occupies in a GGUF data section, as bitnet.cpp's
/// `ggml_nbytes` computes it (docs/GGUF-FORMAT.md §2.7):
///  - block types: ne0 must be a multiple of the block size; rows * (ne0 / block) * block_bytes
///  - I2_S, TL1:   n/4 + 32 (packed 2-bit codes, then a 32-byte slot holding the f32 scale)
///  - TL2:         PAD32((K-256)*M/3*5/8 + 256*M/2*4/8) + 32, K = ne0 >= 256, M = rows
/// Errors on unknown types, ragged block rows and element counts that overflow 64 bits.
result<std::uint64_t> tensor_nbytes(ggml_type type, const tensor_shape& ne);

/// Byte offset, inside an I2_S / TL1 / TL2 tensor, of its f32 scale (docs/GGUF-FORMAT.md §2.2,
/// §2.6).
result<std::uint64_t> ternary_scale_offset(ggml_type type, const tensor_shape& ne);

/// GGUF `general.file_type` as the weight format's name (llama.cpp's LLAMA_FTYPE values and
/// bitnet.cpp's TL1/TL2/I2_S), "ftype N" for others.
[[nodiscard]] std::string file_type_name(std::uint32_t file_type);

} // namespace bitnet::model
