// The common in-memory form of a ternary projection weight (`ternary_matrix`) and the I2_S and
// F32/F16 formats that convert to and from it. TL1/TL2 decoding lives in tl_layout.hpp.
#pragma once

#include "common/error.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <vector>

namespace bitnet::model {

/// A ternary weight matrix W = scale · values, W being M×K (row m = output, column k = input).
/// This is what every projection format (I2_S, TL1, TL2, F32/F16 twins) decodes to at load.
struct ternary_matrix {
    std::uint32_t rows = 0;          ///< M, outputs (GGUF ne[1])
    std::uint32_t cols = 0;          ///< K, inputs (GGUF ne[0], contiguous)
    float scale = 0.0f;              ///< per-tensor scale, stored as f32 by every format
    std::vector<std::int8_t> values; ///< (rows, cols) row-major, each -1, 0 or +1

    [[nodiscard]] std::int8_t at(std::uint32_t m, std::uint32_t k) const noexcept {
        return values[static_cast<std::size_t>(m) * cols + k];
    }
};

/// Decodes an I2_S tensor (docs/GGUF-FORMAT.md §2.2, x86 128/32 block layout). Code 3, which
/// bitnet.cpp never writes, reads as 0 as in `dequantize_row_i2_s`. Errors: not I2_S or not 2-D,
/// element count not a multiple of 128 (the layout is defined for whole blocks only), or the
/// tensor's bytes too short.
[[nodiscard]] result<ternary_matrix> decode_i2s(const gguf_tensor& t);

/// Encodes to exactly the bytes bitnet.cpp's `quantize_i2_s` writes for the tensor: the packed
/// codes (rows·cols/4 bytes), then a 32-byte tail holding the f32 scale first and zeros after (the
/// C quantizer leaves stale bytes there; readers ignore them). Errors: `unsupported_shape` when
/// cols % 128 != 0 (bitnet.cpp's kernels would drop the remainder); `invalid_argument` when the
/// value count does not match the shape or a value is not -1/0/+1.
[[nodiscard]] result<std::vector<std::uint8_t>> encode_i2s(const ternary_matrix& w);

/// Reads an F32 or F16 projection weight that holds exactly scale · {-1, 0, +1} (bitnet.cpp's
/// F32 twin files): scale = max|w| and every element must be 0 or ±scale exactly. Errors:
/// `unsupported` naming the tensor and the first offending index and value (the tensor was not
/// ternarized, so treating it as ternary would change the model); `unsupported` for other types.
[[nodiscard]] result<ternary_matrix> decode_float_ternary(const gguf_tensor& t);

namespace internal {
/// An empty matrix of the tensor's M×K with `values` sized, after checking the tensor is 2-D with
/// both sides in 1..2^32-1 and its data present. Shared by the decoders of every format.
[[nodiscard]] result<ternary_matrix> matrix_for(const gguf_tensor& t);
} // namespace internal

} // namespace bitnet::model
