// Row dequantizers to F32 for the non-ternary tensor types a model may hold (embeddings, output,
// norms): F32, F16, BF16, Q8_0, Q4_0, Q6_K in ggml's exact block layouts and arithmetic.
#pragma once

#include "common/error.hpp"
#include "model/gguf/ggml_type.hpp"

#include <cstdint>

namespace bitnet::model {

/// True for the types dequantize_row reads: F32, F16, BF16, Q8_0, Q4_0, Q6_K.
bool can_dequantize(ggml_type t) noexcept;

/// Bytes one row of `n` elements of `type` occupies. Errors: `unsupported` for types
/// dequantize_row does not read, `unsupported_shape` when n is not a multiple of the block size
/// (32 for Q8_0/Q4_0, 256 for Q6_K).
[[nodiscard]] result<std::uint64_t> row_bytes(ggml_type type, std::uint32_t n);

/// Converts one row of `n` elements, stored at `row` (row_bytes(type, n) bytes, any alignment),
/// to floats in `out` (n floats, owned by the caller). Values equal ggml's dequantize_row_* bit
/// for bit. Errors as row_bytes; nothing is written on error.
[[nodiscard]] result<void> dequantize_row(ggml_type type, const std::uint8_t* row, float* out,
                                          std::uint32_t n);

} // namespace bitnet::model
