// Ports of ggml's dequantize_row_{q8_0,q4_0,q6_K} and the float conversions. The expression
// order of the multiplications follows ggml so that results match it bit for bit.
#include "model/gguf/dequantize.hpp"

#include "model/gguf/f16.hpp"

#include <cstring>
#include <string>

namespace bitnet::model {
namespace {

constexpr std::uint32_t qk8_0 = 32;      // elements per Q8_0 block
constexpr std::uint32_t q8_0_bytes = 34; // f16 d + 32 int8
constexpr std::uint32_t qk4_0 = 32;
constexpr std::uint32_t q4_0_bytes = 18; // f16 d + 16 bytes of nibbles
constexpr std::uint32_t qk_k = 256;
constexpr std::uint32_t q6_k_bytes = 210; // ql[128] qh[64] scales[16] f16 d

std::uint16_t load_u16(const std::uint8_t* p) noexcept {
    std::uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

void dequantize_q8_0(const std::uint8_t* x, float* y, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n / qk8_0; ++i, x += q8_0_bytes) {
        const float d = f16_to_f32(load_u16(x));
        const auto* qs = reinterpret_cast<const std::int8_t*>(x + 2);
        for (std::uint32_t j = 0; j < qk8_0; ++j)
            y[i * qk8_0 + j] = static_cast<float>(qs[j]) * d;
    }
}

void dequantize_q4_0(const std::uint8_t* x, float* y, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n / qk4_0; ++i, x += q4_0_bytes) {
        const float d = f16_to_f32(load_u16(x));
        const std::uint8_t* qs = x + 2;
        for (std::uint32_t j = 0; j < qk4_0 / 2; ++j) {
            // Low nibbles are elements 0..15 of the block, high nibbles 16..31.
            const int x0 = (qs[j] & 0x0f) - 8;
            const int x1 = (qs[j] >> 4) - 8;
            y[i * qk4_0 + j] = static_cast<float>(x0) * d;
            y[i * qk4_0 + j + qk4_0 / 2] = static_cast<float>(x1) * d;
        }
    }
}

void dequantize_q6_k(const std::uint8_t* x, float* y, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n / qk_k; ++i, x += q6_k_bytes) {
        const std::uint8_t* ql = x;
        const std::uint8_t* qh = x + 128;
        const auto* sc = reinterpret_cast<const std::int8_t*>(x + 192);
        const float d = f16_to_f32(load_u16(x + 208));
        for (std::uint32_t half = 0; half < qk_k; half += 128) {
            for (std::uint32_t l = 0; l < 32; ++l) {
                const std::uint32_t is = l / 16;
                const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                // ggml evaluates d * sc * q left to right in float.
                y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
                y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
                y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
                y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

} // namespace

bool can_dequantize(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::f32:
    case ggml_type::f16:
    case ggml_type::bf16:
    case ggml_type::q8_0:
    case ggml_type::q4_0:
    case ggml_type::q6_k:
        return true;
    default:
        return false;
    }
}

result<std::uint64_t> row_bytes(ggml_type type, std::uint32_t n) {
    if (!can_dequantize(type))
        return error(errc::unsupported,
                     "no F32 dequantizer for type " + std::string(ggml_type_name(type)));
    std::uint64_t block = 1, bytes = 0;
    switch (type) {
    case ggml_type::f32:
        bytes = 4;
        break;
    case ggml_type::f16:
    case ggml_type::bf16:
        bytes = 2;
        break;
    case ggml_type::q8_0:
        block = qk8_0;
        bytes = q8_0_bytes;
        break;
    case ggml_type::q4_0:
        block = qk4_0;
        bytes = q4_0_bytes;
        break;
    default: // q6_k; can_dequantize excluded the rest
        block = qk_k;
        bytes = q6_k_bytes;
        break;
    }
    if (n % block != 0)
        return error(errc::unsupported_shape,
                     std::string(ggml_type_name(type)) + " row of " + std::to_string(n) +
                         " elements is not a multiple of its block of " + std::to_string(block));
    return n / block * bytes;
}

result<void> dequantize_row(ggml_type type, const std::uint8_t* row, float* out, std::uint32_t n) {
    BITNET_TRY(row_bytes(type, n));
    switch (type) {
    case ggml_type::f32:
        std::memcpy(out, row, static_cast<std::size_t>(n) * sizeof(float));
        break;
    case ggml_type::f16:
        for (std::uint32_t i = 0; i < n; ++i)
            out[i] = f16_to_f32(load_u16(row + 2 * static_cast<std::size_t>(i)));
        break;
    case ggml_type::bf16:
        for (std::uint32_t i = 0; i < n; ++i)
            out[i] = bf16_to_f32(load_u16(row + 2 * static_cast<std::size_t>(i)));
        break;
    case ggml_type::q8_0:
        dequantize_q8_0(row, out, n);
        break;
    case ggml_type::q4_0:
        dequantize_q4_0(row, out, n);
        break;
    default: // q6_k
        dequantize_q6_k(row, out, n);
        break;
    }
    return {};
}

} // namespace bitnet::model
