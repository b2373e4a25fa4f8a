// GGUF v2/v3 parsing and validation. Every read goes through `cursor`, which checks bounds before
// touching a byte, so a malformed file yields an error naming the offset instead of a crash.
#include "model/gguf_reader.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>

namespace bitnet::model {
namespace {

constexpr std::uint32_t gguf_magic = 0x46554747; // "GGUF" little-endian
constexpr std::uint64_t header_bytes = 24;

std::string at(std::uint64_t off) {
    return "at offset " + std::to_string(off);
}

template <class T>
T load(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

/// Names no byte of the file: whatever it is (a text, a key), its content stays out of messages
/// that an API client reads.
error bad_magic() {
    return error(errc::bad_format,
                 "not a GGUF file: bad magic at offset 0 (a GGUF file starts with \"GGUF\")");
}

class cursor {
public:
    explicit cursor(std::span<const std::uint8_t> bytes)
        : bytes_(bytes) {}

    [[nodiscard]] std::uint64_t pos() const noexcept { return pos_; }
    [[nodiscard]] std::uint64_t remaining() const noexcept { return bytes_.size() - pos_; }
    [[nodiscard]] const std::uint8_t* here() const noexcept { return bytes_.data() + pos_; }

    template <class T>
    result<T> read(const char* what) {
        if (remaining() < sizeof(T))
            return truncated(what, sizeof(T));
        T v;
        std::memcpy(&v, here(), sizeof v);
        pos_ += sizeof v;
        return v;
    }

    result<std::string_view> read_string(const char* what, std::uint64_t max_len) {
        const auto start = pos_;
        auto len = read<std::uint64_t>(what);
        if (!len)
            return len.error();
        if (*len > max_len)
            return error(errc::bad_format, std::string(what) + " " + at(start) + " has length " +
                                               std::to_string(*len) + ", above the limit " +
                                               std::to_string(max_len));
        if (*len > remaining())
            return error(errc::bad_format, std::string(what) + " " + at(start) + " has length " +
                                               std::to_string(*len) + " but only " +
                                               std::to_string(remaining()) +
                                               " bytes remain in the file");
        std::string_view s(reinterpret_cast<const char*>(here()), *len);
        pos_ += *len;
        return s;
    }

    result<void> skip(std::uint64_t n, const char* what) {
        if (n > remaining())
            return truncated(what, n);
        pos_ += n;
        return {};
    }

private:
    error truncated(const char* what, std::uint64_t need) const {
        return error(errc::bad_format, "file truncated: " + std::string(what) + " " + at(pos_) +
                                           " needs " + std::to_string(need) + " bytes, " +
                                           std::to_string(remaining()) + " remain");
    }

    std::span<const std::uint8_t> bytes_;
    std::uint64_t pos_ = 0;
};

bool valid_value_type(std::uint32_t t) {
    return t <= 12;
}

result<void> read_scalar(cursor& c, gguf_value_type t, gguf_value_view& out, const char* what,
                         const gguf_limits& limits) {
    auto fail = [](const error& e) { return e; };
    switch (t) {
#define BITNET_GGUF_INT(tag, ctype, variant_type)                                                  \
    case gguf_value_type::tag: {                                                                   \
        auto v = c.read<ctype>(what);                                                              \
        if (!v)                                                                                    \
            return fail(v.error());                                                                \
        out.scalar = static_cast<variant_type>(*v);                                                \
        return {};                                                                                 \
    }
        BITNET_GGUF_INT(u8, std::uint8_t, std::uint64_t)
        BITNET_GGUF_INT(u16, std::uint16_t, std::uint64_t)
        BITNET_GGUF_INT(u32, std::uint32_t, std::uint64_t)
        BITNET_GGUF_INT(u64, std::uint64_t, std::uint64_t)
        BITNET_GGUF_INT(i8, std::int8_t, std::int64_t)
        BITNET_GGUF_INT(i16, std::int16_t, std::int64_t)
        BITNET_GGUF_INT(i32, std::int32_t, std::int64_t)
        BITNET_GGUF_INT(i64, std::int64_t, std::int64_t)
        BITNET_GGUF_INT(f32, float, double)
        BITNET_GGUF_INT(f64, double, double)
#undef BITNET_GGUF_INT
    case gguf_value_type::boolean: {
        const auto off = c.pos();
        auto v = c.read<std::uint8_t>(what);
        if (!v)
            return v.error();
        if (*v > 1)
            return error(errc::bad_format, std::string(what) + " " + at(off) + ": bool value " +
                                               std::to_string(*v) + " is neither 0 nor 1");
        out.scalar = *v != 0;
        return {};
    }
    case gguf_value_type::string: {
        auto s = c.read_string(what, limits.max_string_bytes);
        if (!s)
            return s.error();
        out.scalar = *s;
        return {};
    }
    case gguf_value_type::array:
        break;
    }
    return error(errc::internal, "read_scalar called for an array");
}

result<gguf_value_view> read_value(cursor& c, std::string_view key, const gguf_limits& limits) {
    gguf_value_view v;
    const auto type_off = c.pos();
    auto type = c.read<std::uint32_t>("value type");
    if (!type)
        return type.error();
    const std::string ctx = "value of key '" + std::string(key) + "'";
    if (!valid_value_type(*type))
        return error(errc::bad_format, "unknown value type " + std::to_string(*type) +
                                           " for key '" + std::string(key) + "' " + at(type_off));
    v.type = static_cast<gguf_value_type>(*type);
    if (v.type != gguf_value_type::array) {
        BITNET_TRY(read_scalar(c, v.type, v, ctx.c_str(), limits));
        return v;
    }
    const auto et_off = c.pos();
    auto et = c.read<std::uint32_t>("array element type");
    if (!et)
        return et.error();
    if (!valid_value_type(*et))
        return error(errc::bad_format, "unknown array element type " + std::to_string(*et) +
                                           " for key '" + std::string(key) + "' " + at(et_off));
    v.array_type = static_cast<gguf_value_type>(*et);
    if (v.array_type == gguf_value_type::array)
        return error(errc::bad_format, "nested arrays are not supported (key '" + std::string(key) +
                                           "' " + at(et_off) + ")");
    const auto n_off = c.pos();
    auto n = c.read<std::uint64_t>("array length");
    if (!n)
        return n.error();
    if (*n > limits.max_array_elements)
        return error(errc::bad_format, "array of key '" + std::string(key) + "' " + at(n_off) +
                                           " claims " + std::to_string(*n) +
                                           " elements, above the limit " +
                                           std::to_string(limits.max_array_elements));
    v.array_count = *n;
    if (v.array_type == gguf_value_type::string) {
        // Each string needs at least its 8-byte length: reject impossible counts before
        // reserving memory for them.
        if (*n > c.remaining() / 8)
            return error(errc::bad_format, "array of key '" + std::string(key) + "' " + at(n_off) +
                                               " claims " + std::to_string(*n) +
                                               " strings, more than the file can hold");
        v.array_strings.reserve(*n);
        for (std::uint64_t i = 0; i < *n; ++i) {
            auto s = c.read_string(ctx.c_str(), limits.max_string_bytes);
            if (!s)
                return s.error();
            v.array_strings.push_back(*s);
        }
        return v;
    }
    const std::uint64_t bytes = *n * gguf_scalar_size(v.array_type); // n <= 2^26: no overflow
    v.array_data = c.here();
    if (bytes > c.remaining())
        return error(errc::bad_format, "array of key '" + std::string(key) + "' " + at(n_off) +
                                           " needs " + std::to_string(bytes) + " bytes, " +
                                           std::to_string(c.remaining()) + " remain");
    if (v.array_type == gguf_value_type::boolean)
        for (std::uint64_t i = 0; i < *n; ++i)
            if (v.array_data[i] > 1)
                return error(errc::bad_format, "bool element " + std::to_string(i) + " of key '" +
                                                   std::string(key) + "' is neither 0 nor 1");
    BITNET_TRY(c.skip(bytes, "array data"));
    return v;
}

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

result<void> check_gguf_magic(const regular_file& file) {
    if (file.size() < header_bytes)
        return error(errc::bad_format, "not a GGUF file: " + std::to_string(file.size()) +
                                           " bytes is shorter than the 24-byte GGUF header");
    std::array<std::uint8_t, 4> magic{};
    BITNET_TRY(file.read_at(0, magic));
    if (load<std::uint32_t>(magic.data()) != gguf_magic)
        return bad_magic();
    return {};
}

result<gguf_file> gguf_file::open(const std::string& path, const gguf_limits& limits,
                                  const cancel_flag* cancel) {
    return read(path, limits, cancel, false);
}

result<gguf_file> gguf_file::open_metadata(const std::string& path, const gguf_limits& limits,
                                           const cancel_flag* cancel) {
    return read(path, limits, cancel, true);
}

result<gguf_file> gguf_file::read(const std::string& path, const gguf_limits& limits,
                                  const cancel_flag* cancel, bool metadata_only) {
    auto file = regular_file::open(path);
    if (!file)
        return file.error();
    if (auto magic = check_gguf_magic(*file); !magic)
        return error(magic.error().value(), path + ": " + magic.error().message);
    // Metadata: a first guess at the prefix, grown while the parse runs past its end.
    std::uint64_t want =
        metadata_only ? std::min<std::uint64_t>(file->size(), 1u << 20) : file->size();
    while (true) {
        auto image = file_image::read(*file, want, cancel);
        if (!image)
            return image.error();
        gguf_file f;
        f.image_ = std::move(*image);
        f.bytes_ = f.image_->bytes();
        f.file_size_ = file->size();
        f.path_ = path;
        auto r = f.parse_all(limits);
        const bool whole = want >= file->size();
        if (!r && !whole && want < max_metadata_bytes) {
            want = std::min({want * 4, file->size(), max_metadata_bytes});
            continue;
        }
        // Whatever the parse found, a file that changed meanwhile is the reason to give.
        BITNET_TRY(file->check_unchanged());
        if (!r && !whole)
            return error(errc::bad_format, path +
                                               ": the GGUF header, metadata and tensor table "
                                               "do not fit in the first " +
                                               std::to_string(max_metadata_bytes >> 20) + " MiB");
        if (!r)
            return error(r.error().value(), path + ": " + r.error().message);
        return f;
    }
}

result<gguf_file> gguf_file::parse(std::span<const std::uint8_t> bytes, const gguf_limits& limits) {
    gguf_file f;
    f.bytes_ = bytes;
    f.file_size_ = bytes.size();
    f.path_ = "<memory>";
    BITNET_TRY(f.parse_all(limits));
    return f;
}

result<void> gguf_file::parse_all(const gguf_limits& limits) {
    cursor c(bytes_);
    if (bytes_.size() < header_bytes)
        return error(errc::bad_format, "file truncated: " + std::to_string(bytes_.size()) +
                                           " bytes is shorter than the 24-byte GGUF header");
    if (*c.read<std::uint32_t>("magic") != gguf_magic)
        return bad_magic();
    version_ = *c.read<std::uint32_t>("version");
    if (version_ != 2 && version_ != 3)
        return error(errc::unsupported, "unsupported GGUF version " + std::to_string(version_) +
                                            " at offset 4 (this reader handles 2 and 3)");
    const auto n_tensors = *c.read<std::uint64_t>("tensor count");
    const auto n_kv = *c.read<std::uint64_t>("metadata count");
    if (n_tensors > limits.max_tensors)
        return error(errc::bad_format, "tensor count " + std::to_string(n_tensors) +
                                           " at offset 8 is above the limit " +
                                           std::to_string(limits.max_tensors));
    if (n_kv > limits.max_kv)
        return error(errc::bad_format, "metadata count " + std::to_string(n_kv) +
                                           " at offset 16 is above the limit " +
                                           std::to_string(limits.max_kv));

    std::unordered_set<std::string_view> keys;
    kvs_.reserve(std::min<std::uint64_t>(n_kv, c.remaining() / 13));
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        gguf_kv kv;
        kv.file_offset = c.pos();
        auto key = c.read_string("metadata key", limits.max_string_bytes);
        if (!key)
            return key.error();
        if (key->empty())
            return error(errc::bad_format, "empty metadata key " + at(kv.file_offset));
        kv.key = *key;
        if (!keys.insert(kv.key).second)
            return error(errc::bad_format, "duplicate metadata key '" + std::string(kv.key) + "' " +
                                               at(kv.file_offset));
        auto v = read_value(c, kv.key, limits);
        if (!v)
            return v.error();
        kv.value = std::move(*v);
        kvs_.push_back(std::move(kv));
    }

    if (const auto* a = find("general.alignment")) {
        if (a->type != gguf_value_type::u32)
            return error(errc::bad_format, "general.alignment must be u32, found " +
                                               std::string(gguf_value_type_name(a->type)));
        const auto v = std::get<std::uint64_t>(a->scalar);
        if (v == 0 || (v & (v - 1)) != 0)
            return error(errc::bad_format,
                         "general.alignment " + std::to_string(v) + " is not a power of two");
        alignment_ = static_cast<std::uint32_t>(v);
    }

    std::unordered_set<std::string_view> names;
    tensors_.reserve(std::min<std::uint64_t>(n_tensors, c.remaining() / 24));
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        gguf_tensor t;
        const auto off = c.pos();
        auto name = c.read_string("tensor name", limits.max_string_bytes);
        if (!name)
            return name.error();
        if (name->empty())
            return error(errc::bad_format,
                         "tensor " + std::to_string(i) + " " + at(off) + " has an empty name");
        t.name = *name;
        const std::string who = "tensor '" + std::string(t.name) + "' (info " + at(off) + ")";
        if (!names.insert(t.name).second)
            return error(errc::bad_format, "duplicate " + who);
        auto nd = c.read<std::uint32_t>("tensor dimension count");
        if (!nd)
            return nd.error();
        if (*nd < 1 || *nd > 4)
            return error(errc::bad_format,
                         who + " has " + std::to_string(*nd) + " dimensions (1 to 4 allowed)");
        t.n_dims = *nd;
        for (std::uint32_t d = 0; d < t.n_dims; ++d) {
            auto ne = c.read<std::uint64_t>("tensor dimension");
            if (!ne)
                return ne.error();
            if (*ne == 0 || *ne > (std::uint64_t{1} << 40))
                return error(errc::bad_format, who + " has dimension " + std::to_string(d) + " = " +
                                                   std::to_string(*ne));
            t.ne[d] = *ne;
        }
        const auto type_off = c.pos();
        auto type = c.read<std::uint32_t>("tensor type");
        if (!type)
            return type.error();
        if (!ggml_type_known(*type))
            return error(errc::unsupported, who + " has unknown ggml type id " +
                                                std::to_string(*type) + " " + at(type_off));
        t.type = static_cast<ggml_type>(*type);
        auto tensor_off = c.read<std::uint64_t>("tensor offset");
        if (!tensor_off)
            return tensor_off.error();
        t.offset = *tensor_off;
        if (t.offset % alignment_ != 0)
            return error(errc::bad_format, who + " data offset " + std::to_string(t.offset) +
                                               " is not a multiple of the alignment " +
                                               std::to_string(alignment_));
        auto nb = tensor_nbytes(t.type, t.ne);
        if (!nb)
            return error(nb.error().value(), who + ": " + nb.error().message);
        t.n_bytes = *nb;
        tensors_.push_back(t);
    }

    data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
    if (data_offset_ > file_size_ && !tensors_.empty())
        return error(errc::bad_format, "file truncated: the data section would start at " +
                                           std::to_string(data_offset_) + ", past the end (" +
                                           std::to_string(file_size_) + " bytes)");
    const std::uint64_t data_size = file_size_ > data_offset_ ? file_size_ - data_offset_ : 0;
    // Only the metadata prefix in memory: tensors are checked against the file, not read.
    const bool have_data = bytes_.size() == file_size_;
    for (auto& t : tensors_) {
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            return error(errc::bad_format,
                         "tensor '" + std::string(t.name) + "' bytes [" + std::to_string(t.offset) +
                             ", +" + std::to_string(t.n_bytes) +
                             ") lie outside the data section of " + std::to_string(data_size) +
                             " bytes (file truncated?)");
        t.data = have_data ? bytes_.data() + data_offset_ + t.offset : nullptr;
    }
    std::vector<const gguf_tensor*> by_offset;
    by_offset.reserve(tensors_.size());
    for (const auto& t : tensors_)
        by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
        const auto* prev = by_offset[i - 1];
        const auto* cur = by_offset[i];
        if (prev->offset + prev->n_bytes > cur->offset)
            return error(errc::bad_format, "tensors '" + std::string(prev->name) + "' [" +
                                               std::to_string(prev->offset) + ", +" +
                                               std::to_string(prev->n_bytes) + ") and '" +
                                               std::string(cur->name) + "' [" +
                                               std::to_string(cur->offset) + ") overlap");
    }
    return {};
}

const gguf_value_view* gguf_file::find(std::string_view key) const noexcept {
    for (const auto& kv : kvs_)
        if (kv.key == key)
            return &kv.value;
    return nullptr;
}

void gguf_file::release_pages(const gguf_tensor& t) const noexcept {
    if (image_ != nullptr && t.data != nullptr)
        image_->release_pages(t.bytes());
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
