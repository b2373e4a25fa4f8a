// GGUF metadata values: the on-disk value types, a non-owning view (reader side) and an owning
// value (writer side, and for copying metadata from one file to another).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bitnet::model {

/// `enum gguf_type` of the GGUF spec.
enum class gguf_value_type : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

std::string_view gguf_value_type_name(gguf_value_type t) noexcept;
/// Bytes of one scalar element; 0 for string and array.
std::size_t gguf_scalar_size(gguf_value_type t) noexcept;

/// A value inside a mapped file. Scalars are decoded; arrays keep a pointer to their packed
/// little-endian elements (numeric) or a list of views (strings). Nested arrays are rejected by the
/// reader, as bitnet.cpp's reader does.
struct gguf_value_view {
    gguf_value_type type = gguf_value_type::u8;
    std::variant<std::uint64_t, std::int64_t, double, bool, std::string_view> scalar;
    gguf_value_type array_type = gguf_value_type::u8; ///< when type == array
    std::uint64_t array_count = 0;
    const std::uint8_t* array_data = nullptr;    ///< numeric arrays: packed elements
    std::vector<std::string_view> array_strings; ///< string arrays
};

/// An owned metadata value, exactly typed (what the writer emits).
struct gguf_value {
    gguf_value_type type = gguf_value_type::u32;
    std::variant<std::uint64_t, std::int64_t, double, bool, std::string> scalar;
    gguf_value_type array_type = gguf_value_type::u8;
    /// Numeric array elements widened to one of these, by array_type.
    std::vector<std::uint64_t> array_uints;
    std::vector<std::int64_t> array_ints;
    std::vector<double> array_floats;
    std::vector<std::string> array_strings;

    static gguf_value u32(std::uint32_t v);
    static gguf_value i32(std::int32_t v);
    static gguf_value u64(std::uint64_t v);
    static gguf_value f32(float v);
    static gguf_value boolean(bool v);
    static gguf_value string(std::string v);
    static gguf_value strings(std::vector<std::string> v);
    static gguf_value f32s(const std::vector<float>& v);
    static gguf_value i32s(const std::vector<std::int32_t>& v);
    /// A copy of a reader-side view with the same types.
    static gguf_value from_view(const gguf_value_view& v);
};

} // namespace bitnet::model
