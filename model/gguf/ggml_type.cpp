// Byte-size rules of ggml tensor types as bitnet.cpp's fork computes them (docs/GGUF-FORMAT.md §2).
#include "model/gguf/ggml_type.hpp"

#include <string>

namespace bitnet::model {
namespace {

struct type_traits {
    std::uint32_t id;
    std::string_view name;
    std::uint64_t block_elems; ///< elements per block
    std::uint64_t block_bytes; ///< bytes per block
};

// Block geometry of ggml's standard types (ggml.c type_traits). The ternary types (I2_S, TL1,
// TL2) are listed with blck 1 / size 1 as the fork does, but their sizes follow special rules.
constexpr type_traits traits[] = {
    {0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},    {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},      {27, "I64", 1, 8},      {28, "F64", 1, 8},      {30, "BF16", 1, 2},
    {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66}, {36, "I2_S", 1, 1},     {37, "I8_S", 1, 1},
    {38, "TL1", 1, 1},      {39, "TL2", 1, 1},
};

const type_traits* find_traits(std::uint32_t id) {
    for (const auto& t : traits)
        if (t.id == id)
            return &t;
    return nullptr;
}

constexpr std::uint64_t pad32(std::uint64_t n) {
    return (n + 31) / 32 * 32;
}

// a*b with overflow detection.
bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    return !__builtin_mul_overflow(a, b, &out);
}

} // namespace

std::string_view ggml_type_name(ggml_type t) noexcept {
    const auto* tr = find_traits(static_cast<std::uint32_t>(t));
    return tr ? tr->name : std::string_view("?");
}

bool ggml_type_known(std::uint32_t id) noexcept {
    return id != static_cast<std::uint32_t>(ggml_type::i8_s) && find_traits(id) != nullptr;
}

result<std::uint64_t> tensor_nbytes(ggml_type type, const tensor_shape& ne) {
    const auto id = static_cast<std::uint32_t>(type);
    const auto* tr = find_traits(id);
    if (!tr || type == ggml_type::i8_s)
        return error(errc::unsupported, "unknown ggml type id " + std::to_string(id));
    std::uint64_t n = 1;
    for (auto d : ne)
        if (!mul_ok(n, d, n))
            return error(errc::bad_format, "tensor element count overflows 64 bits");
    const std::uint64_t rows = ne[1] * ne[2] * ne[3]; // cannot overflow: a sub-product of n

    switch (type) {
    case ggml_type::i2_s:
    case ggml_type::tl1:
        // 2 bits per weight plus one 32-byte slot whose first 4 bytes are the f32 scale.
        return n / 4 + 32;
    case ggml_type::tl2: {
        const std::uint64_t k = ne[0];
        if (k < 256)
            return error(errc::unsupported, "TL2 tensor with ne0 = " + std::to_string(k) +
                                                " (< 256) has no size rule");
        std::uint64_t a = 0, b = 0;
        if (!mul_ok(k - 256, rows, a) || !mul_ok(256, rows, b))
            return error(errc::bad_format, "TL2 tensor size overflows 64 bits");
        // The fork's expression, evaluated left to right in integer arithmetic.
        const std::uint64_t s = a / 3 * 5 / 8 + b / 2 * 4 / 8;
        return pad32(s) + 32;
    }
    default:
        break;
    }
    if (ne[0] % tr->block_elems != 0)
        return error(errc::bad_format, std::string(tr->name) + " tensor row of " +
                                           std::to_string(ne[0]) +
                                           " elements is not a multiple of the block size " +
                                           std::to_string(tr->block_elems));
    std::uint64_t row_bytes = ne[0] / tr->block_elems * tr->block_bytes;
    std::uint64_t total = 0;
    if (!mul_ok(row_bytes, rows, total))
        return error(errc::bad_format, "tensor byte size overflows 64 bits");
    return total;
}

result<std::uint64_t> ternary_scale_offset(ggml_type type, const tensor_shape& ne) {
    switch (type) {
    case ggml_type::i2_s:
        return ne[0] * ne[1] * ne[2] * ne[3] / 4;
    case ggml_type::tl1:
        return pad32(ne[0] * ne[1] * ne[2] * ne[3] / 4);
    case ggml_type::tl2: {
        auto n = tensor_nbytes(type, ne);
        if (!n)
            return n.error();
        return *n - 32;
    }
    default:
        return error(errc::invalid_argument,
                     std::string(ggml_type_name(type)) + " is not a ternary type");
    }
}

std::string file_type_name(std::uint32_t file_type) {
    switch (file_type) {
    case 0:
        return "f32";
    case 1:
        return "f16";
    case 7:
        return "q8_0";
    case 32:
        return "bf16";
    case 36:
        return "tq1_0";
    case 37:
        return "tq2_0";
    case 38:
        return "tl1";
    case 39:
        return "tl2";
    case 40:
        return "i2_s";
    default:
        return "ftype " + std::to_string(file_type);
    }
}

} // namespace bitnet::model
