// gguf_file's lookups and typed getters over the parsed metadata (views into the file's bytes).
#include "model/gguf/gguf_cursor.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <limits>
#include <string>

namespace bitnet::model {
namespace {

using gguf_detail::load;

// Element i of a numeric array, as the widest type of its kind.
double array_float_at(const gguf_value_view& v, std::uint64_t i) {
    const std::uint8_t* p = v.array_data + i * gguf_scalar_size(v.array_type);
    switch (v.array_type) {
    case gguf_value_type::f32:
        return load<float>(p);
    case gguf_value_type::f64:
        return load<double>(p);
    case gguf_value_type::u8:
        return load<std::uint8_t>(p);
    case gguf_value_type::i8:
        return load<std::int8_t>(p);
    case gguf_value_type::u16:
        return load<std::uint16_t>(p);
    case gguf_value_type::i16:
        return load<std::int16_t>(p);
    case gguf_value_type::u32:
        return load<std::uint32_t>(p);
    case gguf_value_type::i32:
        return load<std::int32_t>(p);
    case gguf_value_type::u64:
        return static_cast<double>(load<std::uint64_t>(p));
    case gguf_value_type::i64:
        return static_cast<double>(load<std::int64_t>(p));
    default:
        return 0;
    }
}

bool is_integer_type(gguf_value_type t) {
    switch (t) {
    case gguf_value_type::u8:
    case gguf_value_type::i8:
    case gguf_value_type::u16:
    case gguf_value_type::i16:
    case gguf_value_type::u32:
    case gguf_value_type::i32:
    case gguf_value_type::u64:
    case gguf_value_type::i64:
        return true;
    default:
        return false;
    }
}

error wrong_type(std::string_view key, const gguf_value_view& v, const char* wanted) {
    return error(errc::bad_format, "metadata key '" + std::string(key) + "' holds " +
                                       std::string(gguf_value_type_name(v.type)) + ", expected " +
                                       wanted);
}

error missing(std::string_view key) {
    return error(errc::not_found, "metadata key '" + std::string(key) + "' is missing");
}

} // namespace

const gguf_value_view* gguf_file::find(std::string_view key) const noexcept {
    for (const auto& kv : kvs_)
        if (kv.key == key)
            return &kv.value;
    return nullptr;
}

const gguf_tensor* gguf_file::find_tensor(std::string_view name) const noexcept {
    for (const auto& t : tensors_)
        if (t.name == name)
            return &t;
    return nullptr;
}

result<std::uint64_t> gguf_file::get_uint(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (!is_integer_type(v->type))
        return wrong_type(key, *v, "an unsigned integer");
    if (const auto* u = std::get_if<std::uint64_t>(&v->scalar))
        return *u;
    const auto s = std::get<std::int64_t>(v->scalar);
    if (s < 0)
        return error(errc::bad_format, "metadata key '" + std::string(key) + "' is negative (" +
                                           std::to_string(s) + ")");
    return static_cast<std::uint64_t>(s);
}

result<std::int64_t> gguf_file::get_int(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (!is_integer_type(v->type))
        return wrong_type(key, *v, "an integer");
    if (const auto* s = std::get_if<std::int64_t>(&v->scalar))
        return *s;
    const auto u = std::get<std::uint64_t>(v->scalar);
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return error(errc::bad_format, "metadata key '" + std::string(key) + "' overflows int64");
    return static_cast<std::int64_t>(u);
}

result<double> gguf_file::get_float(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (const auto* d = std::get_if<double>(&v->scalar); d && v->type != gguf_value_type::array)
        return *d;
    return wrong_type(key, *v, "f32 or f64");
}

result<bool> gguf_file::get_bool(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (v->type != gguf_value_type::boolean)
        return wrong_type(key, *v, "bool");
    return std::get<bool>(v->scalar);
}

result<std::string_view> gguf_file::get_string(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (v->type != gguf_value_type::string)
        return wrong_type(key, *v, "string");
    return std::get<std::string_view>(v->scalar);
}

result<std::vector<std::string_view>> gguf_file::get_string_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (v->type != gguf_value_type::array || v->array_type != gguf_value_type::string)
        return wrong_type(key, *v, "array of strings");
    return v->array_strings;
}

result<std::vector<float>> gguf_file::get_float_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (v->type != gguf_value_type::array || v->array_type == gguf_value_type::string ||
        v->array_type == gguf_value_type::boolean)
        return wrong_type(key, *v, "numeric array");
    std::vector<float> out(v->array_count);
    for (std::uint64_t i = 0; i < v->array_count; ++i)
        out[i] = static_cast<float>(array_float_at(*v, i));
    return out;
}

result<std::vector<std::int64_t>> gguf_file::get_int_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v)
        return missing(key);
    if (v->type != gguf_value_type::array || !is_integer_type(v->array_type))
        return wrong_type(key, *v, "integer array");
    std::vector<std::int64_t> out(v->array_count);
    const std::size_t sz = gguf_scalar_size(v->array_type);
    for (std::uint64_t i = 0; i < v->array_count; ++i) {
        const std::uint8_t* p = v->array_data + i * sz;
        switch (v->array_type) {
        case gguf_value_type::u8:
            out[i] = load<std::uint8_t>(p);
            break;
        case gguf_value_type::i8:
            out[i] = load<std::int8_t>(p);
            break;
        case gguf_value_type::u16:
            out[i] = load<std::uint16_t>(p);
            break;
        case gguf_value_type::i16:
            out[i] = load<std::int16_t>(p);
            break;
        case gguf_value_type::u32:
            out[i] = load<std::uint32_t>(p);
            break;
        case gguf_value_type::i32:
            out[i] = load<std::int32_t>(p);
            break;
        case gguf_value_type::u64:
            out[i] = static_cast<std::int64_t>(load<std::uint64_t>(p));
            break;
        case gguf_value_type::i64:
            out[i] = load<std::int64_t>(p);
            break;
        default:
            break;
        }
    }
    return out;
}

} // namespace bitnet::model
