// GGUF metadata value helpers: type names, element sizes, owned-value constructors.
#include "model/gguf/gguf_value.hpp"

#include <cstring>

namespace bitnet::model {

std::string_view gguf_value_type_name(gguf_value_type t) noexcept {
    switch (t) {
    case gguf_value_type::u8:
        return "u8";
    case gguf_value_type::i8:
        return "i8";
    case gguf_value_type::u16:
        return "u16";
    case gguf_value_type::i16:
        return "i16";
    case gguf_value_type::u32:
        return "u32";
    case gguf_value_type::i32:
        return "i32";
    case gguf_value_type::f32:
        return "f32";
    case gguf_value_type::boolean:
        return "bool";
    case gguf_value_type::string:
        return "string";
    case gguf_value_type::array:
        return "array";
    case gguf_value_type::u64:
        return "u64";
    case gguf_value_type::i64:
        return "i64";
    case gguf_value_type::f64:
        return "f64";
    }
    return "?";
}

std::size_t gguf_scalar_size(gguf_value_type t) noexcept {
    switch (t) {
    case gguf_value_type::u8:
    case gguf_value_type::i8:
    case gguf_value_type::boolean:
        return 1;
    case gguf_value_type::u16:
    case gguf_value_type::i16:
        return 2;
    case gguf_value_type::u32:
    case gguf_value_type::i32:
    case gguf_value_type::f32:
        return 4;
    case gguf_value_type::u64:
    case gguf_value_type::i64:
    case gguf_value_type::f64:
        return 8;
    case gguf_value_type::string:
    case gguf_value_type::array:
        return 0;
    }
    return 0;
}

gguf_value gguf_value::u32(std::uint32_t v) {
    gguf_value r;
    r.type = gguf_value_type::u32;
    r.scalar = std::uint64_t{v};
    return r;
}
gguf_value gguf_value::i32(std::int32_t v) {
    gguf_value r;
    r.type = gguf_value_type::i32;
    r.scalar = std::int64_t{v};
    return r;
}
gguf_value gguf_value::u64(std::uint64_t v) {
    gguf_value r;
    r.type = gguf_value_type::u64;
    r.scalar = v;
    return r;
}
gguf_value gguf_value::f32(float v) {
    gguf_value r;
    r.type = gguf_value_type::f32;
    r.scalar = double{v};
    return r;
}
gguf_value gguf_value::boolean(bool v) {
    gguf_value r;
    r.type = gguf_value_type::boolean;
    r.scalar = v;
    return r;
}
gguf_value gguf_value::string(std::string v) {
    gguf_value r;
    r.type = gguf_value_type::string;
    r.scalar = std::move(v);
    return r;
}
gguf_value gguf_value::strings(std::vector<std::string> v) {
    gguf_value r;
    r.type = gguf_value_type::array;
    r.array_type = gguf_value_type::string;
    r.array_strings = std::move(v);
    return r;
}
gguf_value gguf_value::f32s(const std::vector<float>& v) {
    gguf_value r;
    r.type = gguf_value_type::array;
    r.array_type = gguf_value_type::f32;
    r.array_floats.assign(v.begin(), v.end());
    return r;
}
gguf_value gguf_value::i32s(const std::vector<std::int32_t>& v) {
    gguf_value r;
    r.type = gguf_value_type::array;
    r.array_type = gguf_value_type::i32;
    r.array_ints.assign(v.begin(), v.end());
    return r;
}

namespace {
template <class T>
T load(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
} // namespace

gguf_value gguf_value::from_view(const gguf_value_view& v) {
    gguf_value r;
    r.type = v.type;
    if (v.type != gguf_value_type::array) {
        std::visit(
            [&](const auto& s) {
                using S = std::decay_t<decltype(s)>;
                if constexpr (std::is_same_v<S, std::string_view>)
                    r.scalar = std::string(s);
                else
                    r.scalar = s;
            },
            v.scalar);
        return r;
    }
    r.array_type = v.array_type;
    const std::size_t sz = gguf_scalar_size(v.array_type);
    for (std::uint64_t i = 0; i < v.array_count; ++i) {
        const std::uint8_t* p = v.array_data + i * sz;
        switch (v.array_type) {
        case gguf_value_type::u8:
            r.array_uints.push_back(load<std::uint8_t>(p));
            break;
        case gguf_value_type::u16:
            r.array_uints.push_back(load<std::uint16_t>(p));
            break;
        case gguf_value_type::u32:
            r.array_uints.push_back(load<std::uint32_t>(p));
            break;
        case gguf_value_type::u64:
            r.array_uints.push_back(load<std::uint64_t>(p));
            break;
        case gguf_value_type::boolean:
            r.array_uints.push_back(load<std::uint8_t>(p));
            break;
        case gguf_value_type::i8:
            r.array_ints.push_back(load<std::int8_t>(p));
            break;
        case gguf_value_type::i16:
            r.array_ints.push_back(load<std::int16_t>(p));
            break;
        case gguf_value_type::i32:
            r.array_ints.push_back(load<std::int32_t>(p));
            break;
        case gguf_value_type::i64:
            r.array_ints.push_back(load<std::int64_t>(p));
            break;
        case gguf_value_type::f32:
            r.array_floats.push_back(load<float>(p));
            break;
        case gguf_value_type::f64:
            r.array_floats.push_back(load<double>(p));
            break;
        case gguf_value_type::string:
            r.array_strings.emplace_back(v.array_strings[i]);
            break;
        case gguf_value_type::array:
            break;
        }
    }
    return r;
}

} // namespace bitnet::model
