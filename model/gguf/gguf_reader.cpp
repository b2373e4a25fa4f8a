// GGUF v2/v3 parsing and validation. Every read goes through `cursor`, which checks bounds before
// touching a byte, so a malformed file yields an error naming the offset instead of a crash.
#include "model/gguf/gguf_reader.hpp"

#include "model/gguf/gguf_cursor.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>

namespace bitnet::model {
namespace {

using gguf_detail::at;
using gguf_detail::cursor;
using gguf_detail::load;

constexpr std::uint32_t gguf_magic = 0x46554747; // "GGUF" little-endian
constexpr std::uint64_t header_bytes = 24;

/// Names no byte of the file: whatever it is (a text, a key), its content stays out of messages
/// that an API client reads.
error bad_magic() {
    return error(errc::bad_format,
                 "not a GGUF file: bad magic at offset 0 (a GGUF file starts with \"GGUF\")");
}

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
    auto counts = parse_header(c, limits);
    if (!counts)
        return counts.error();
    BITNET_TRY(parse_metadata(c, counts->second, limits));
    BITNET_TRY(parse_alignment());
    BITNET_TRY(parse_tensor_table(c, counts->first, limits));
    return place_tensors(c.pos());
}

result<std::pair<std::uint64_t, std::uint64_t>> gguf_file::parse_header(gguf_detail::cursor& c,
                                                                        const gguf_limits& limits) {
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
    return std::pair{n_tensors, n_kv};
}

result<void> gguf_file::parse_metadata(gguf_detail::cursor& c, std::uint64_t n_kv,
                                       const gguf_limits& limits) {
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
    return {};
}

result<void> gguf_file::parse_alignment() {
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
    return {};
}

result<void> gguf_file::parse_tensor_table(gguf_detail::cursor& c, std::uint64_t n_tensors,
                                           const gguf_limits& limits) {
    std::unordered_set<std::string_view> names;
    tensors_.reserve(std::min<std::uint64_t>(n_tensors, c.remaining() / 24));
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        auto t = parse_tensor_info(c, i, names, limits);
        if (!t)
            return t.error();
        tensors_.push_back(*t);
    }
    return {};
}

result<gguf_tensor> gguf_file::parse_tensor_info(gguf_detail::cursor& c, std::uint64_t i,
                                                 std::unordered_set<std::string_view>& names,
                                                 const gguf_limits& limits) const {
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
            return error(errc::bad_format,
                         who + " has dimension " + std::to_string(d) + " = " + std::to_string(*ne));
        t.ne[d] = *ne;
    }
    const auto type_off = c.pos();
    auto type = c.read<std::uint32_t>("tensor type");
    if (!type)
        return type.error();
    if (!ggml_type_known(*type))
        return error(errc::unsupported, who + " has unknown ggml type id " + std::to_string(*type) +
                                            " " + at(type_off));
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
    return t;
}

result<void> gguf_file::place_tensors(std::uint64_t table_end) {
    data_offset_ = (table_end + alignment_ - 1) / alignment_ * alignment_;
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

void gguf_file::release_pages(const gguf_tensor& t) const noexcept {
    if (image_ != nullptr && t.data != nullptr)
        image_->release_pages(t.bytes());
}

} // namespace bitnet::model
