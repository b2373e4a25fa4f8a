// I2_S and F32/F16-twin conversions to and from ternary_matrix (docs/GGUF-FORMAT.md §2.2, §2.5).
#include "model/engine/weights/ternary_weights.hpp"

#include "model/gguf/f16.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

namespace bitnet::model {
namespace {

constexpr std::uint64_t i2s_block = 128;      // codes per block
constexpr std::uint64_t i2s_block_bytes = 32; // bytes per block
constexpr std::uint64_t i2s_tail_bytes = 32;  // scale slot after the packed codes

std::string tensor_label(const gguf_tensor& t) {
    return std::string(ggml_type_name(t.type)) + " tensor '" + std::string(t.name) + "'";
}

// Packed byte offset and bit shift of code i in the flat row-major code array (docs/GGUF-FORMAT.md
// §2.2): code j of block b sits in byte 32b + j%32 at shift 6 - 2*(j/32).
struct i2s_pos {
    std::uint64_t byte;
    unsigned shift;
};
constexpr i2s_pos i2s_position(std::uint64_t i) noexcept {
    const std::uint64_t b = i / i2s_block;
    const std::uint64_t j = i % i2s_block;
    return {b * i2s_block_bytes + j % 32, static_cast<unsigned>(6 - 2 * (j / 32))};
}

float read_f32_le(const std::uint8_t* p) noexcept {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
}

std::string format_float(float v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

} // namespace

namespace internal {

result<ternary_matrix> matrix_for(const gguf_tensor& t) {
    if (t.ne[2] != 1 || t.ne[3] != 1)
        return error(errc::unsupported_shape,
                     tensor_label(t) + " is not 2-D (ne = [" + std::to_string(t.ne[0]) + ", " +
                         std::to_string(t.ne[1]) + ", " + std::to_string(t.ne[2]) + ", " +
                         std::to_string(t.ne[3]) + "])");
    constexpr auto max_side = std::numeric_limits<std::uint32_t>::max();
    if (t.ne[0] == 0 || t.ne[1] == 0 || t.ne[0] > max_side || t.ne[1] > max_side)
        return error(errc::unsupported_shape, tensor_label(t) + " has an empty or oversized side " +
                                                  "(K = " + std::to_string(t.ne[0]) +
                                                  ", M = " + std::to_string(t.ne[1]) + ")");
    if (t.data == nullptr)
        return error(errc::internal, tensor_label(t) + " has no data");
    ternary_matrix w;
    w.cols = static_cast<std::uint32_t>(t.ne[0]);
    w.rows = static_cast<std::uint32_t>(t.ne[1]);
    w.values.resize(static_cast<std::size_t>(t.ne[0]) * t.ne[1]);
    return w;
}

} // namespace internal

result<ternary_matrix> decode_i2s(const gguf_tensor& t) {
    if (t.type != ggml_type::i2_s)
        return error(errc::invalid_argument, tensor_label(t) + " is not I2_S");
    auto w = internal::matrix_for(t);
    if (!w)
        return w.error();
    const std::uint64_t n = w->values.size();
    if (n % i2s_block != 0)
        return error(errc::unsupported_shape,
                     tensor_label(t) + " has " + std::to_string(n) +
                         " elements, not a multiple of the 128-code I2_S block");
    const std::uint64_t packed = n / 4;
    if (t.n_bytes < packed + 4)
        return error(errc::bad_format, tensor_label(t) + " holds " + std::to_string(t.n_bytes) +
                                           " bytes, fewer than its packed codes and scale (" +
                                           std::to_string(packed + 4) + ")");
    for (std::uint64_t i = 0; i < n; ++i) {
        const auto pos = i2s_position(i);
        const unsigned code = (t.data[pos.byte] >> pos.shift) & 3u;
        // Codes 0, 1, 2 mean -1, 0, +1; the unused code 3 reads as 0 like dequantize_row_i2_s.
        w->values[i] = code == 3 ? 0 : static_cast<std::int8_t>(static_cast<int>(code) - 1);
    }
    w->scale = read_f32_le(t.data + packed);
    return w;
}

result<std::vector<std::uint8_t>> encode_i2s(const ternary_matrix& w) {
    const std::uint64_t n = static_cast<std::uint64_t>(w.rows) * w.cols;
    if (w.values.size() != n)
        return error(errc::invalid_argument, "ternary matrix of " + std::to_string(w.rows) + "x" +
                                                 std::to_string(w.cols) + " holds " +
                                                 std::to_string(w.values.size()) + " values");
    if (w.cols % i2s_block != 0)
        return error(errc::unsupported_shape,
                     "I2_S needs the input dimension K to be a multiple of 128 (bitnet.cpp's "
                     "kernels drop the remainder), but K = " +
                         std::to_string(w.cols) + " (M = " + std::to_string(w.rows) + ")");
    std::vector<std::uint8_t> out(n / 4 + i2s_tail_bytes, 0);
    for (std::uint64_t i = 0; i < n; ++i) {
        const int v = w.values[i];
        if (v < -1 || v > 1)
            return error(errc::invalid_argument, "ternary matrix value " + std::to_string(v) +
                                                     " at index " + std::to_string(i) +
                                                     " is not -1, 0 or +1");
        const auto pos = i2s_position(i);
        out[pos.byte] |= static_cast<std::uint8_t>((v + 1) << pos.shift);
    }
    std::memcpy(out.data() + n / 4, &w.scale, sizeof w.scale);
    return out;
}

result<ternary_matrix> decode_float_ternary(const gguf_tensor& t) {
    if (t.type != ggml_type::f32 && t.type != ggml_type::f16)
        return error(errc::unsupported,
                     tensor_label(t) +
                         " is not F32 or F16, so it cannot be read as a ternary twin");
    auto w = internal::matrix_for(t);
    if (!w)
        return w.error();
    const std::uint64_t n = w->values.size();
    const std::uint64_t elem_bytes = t.type == ggml_type::f32 ? 4 : 2;
    if (t.n_bytes < n * elem_bytes)
        return error(errc::bad_format, tensor_label(t) + " holds " + std::to_string(t.n_bytes) +
                                           " bytes, fewer than its " + std::to_string(n) +
                                           " elements need");
    const auto element = [&](std::uint64_t i) -> float {
        if (t.type == ggml_type::f32)
            return read_f32_le(t.data + 4 * i);
        std::uint16_t h;
        std::memcpy(&h, t.data + 2 * i, sizeof h);
        return f16_to_f32(h);
    };

    // Same rule as quantize_i2_s: the scale is the largest magnitude. NaN is skipped here (fmax)
    // and then rejected below as an offending value.
    float scale = 0.0f;
    for (std::uint64_t i = 0; i < n; ++i)
        scale = std::fmax(scale, std::fabs(element(i)));
    if (!std::isfinite(scale))
        return error(errc::unsupported, tensor_label(t) + " holds an infinite value");

    for (std::uint64_t i = 0; i < n; ++i) {
        const float v = element(i);
        if (v == 0.0f) {
            w->values[i] = 0;
        } else if (v == scale) {
            w->values[i] = 1;
        } else if (v == -scale) {
            w->values[i] = -1;
        } else {
            return error(errc::unsupported,
                         tensor_label(t) + " is not ternary: element " + std::to_string(i) +
                             " (row " + std::to_string(i / w->cols) + ", column " +
                             std::to_string(i % w->cols) + ") is " + format_float(v) +
                             ", not 0 or ±" + format_float(scale) +
                             "; only weights holding exactly scale × {-1, 0, +1} are supported");
        }
    }
    w->scale = scale;
    return w;
}

} // namespace bitnet::model
