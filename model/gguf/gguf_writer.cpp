// GGUF v3 writer: header, metadata, tensor infos, zero padding to the alignment, tensor data.
#include "model/gguf/gguf_writer.hpp"

#include <cerrno>
#include <cstring>
#include <unordered_set>

namespace bitnet::model {
namespace {

void put_bytes(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + n);
}

template <class T>
void put_le(std::vector<std::uint8_t>& out, T v) {
    put_bytes(out, &v, sizeof v); // the project targets little-endian hosts only (x86-64, arm64)
}

void put_string(std::vector<std::uint8_t>& out, std::string_view s) {
    put_le<std::uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

void put_scalar(std::vector<std::uint8_t>& out, gguf_value_type t, std::uint64_t u, std::int64_t i,
                double f) {
    switch (t) {
    case gguf_value_type::u8:
        put_le<std::uint8_t>(out, static_cast<std::uint8_t>(u));
        break;
    case gguf_value_type::u16:
        put_le<std::uint16_t>(out, static_cast<std::uint16_t>(u));
        break;
    case gguf_value_type::u32:
        put_le<std::uint32_t>(out, static_cast<std::uint32_t>(u));
        break;
    case gguf_value_type::u64:
        put_le<std::uint64_t>(out, u);
        break;
    case gguf_value_type::boolean:
        put_le<std::uint8_t>(out, u != 0 ? 1 : 0);
        break;
    case gguf_value_type::i8:
        put_le<std::int8_t>(out, static_cast<std::int8_t>(i));
        break;
    case gguf_value_type::i16:
        put_le<std::int16_t>(out, static_cast<std::int16_t>(i));
        break;
    case gguf_value_type::i32:
        put_le<std::int32_t>(out, static_cast<std::int32_t>(i));
        break;
    case gguf_value_type::i64:
        put_le<std::int64_t>(out, i);
        break;
    case gguf_value_type::f32:
        put_le<float>(out, static_cast<float>(f));
        break;
    case gguf_value_type::f64:
        put_le<double>(out, f);
        break;
    case gguf_value_type::string:
    case gguf_value_type::array:
        break;
    }
}

result<void> put_value(std::vector<std::uint8_t>& out, const std::string& key,
                       const gguf_value& v) {
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(v.type));
    if (v.type == gguf_value_type::string) {
        const auto* s = std::get_if<std::string>(&v.scalar);
        if (!s)
            return error(errc::invalid_argument, "key '" + key + "': string value without text");
        put_string(out, *s);
        return {};
    }
    if (v.type != gguf_value_type::array) {
        std::uint64_t u = 0;
        std::int64_t i = 0;
        double f = 0;
        if (const auto* pu = std::get_if<std::uint64_t>(&v.scalar)) {
            u = *pu;
            i = static_cast<std::int64_t>(*pu);
            f = static_cast<double>(*pu);
        } else if (const auto* pi = std::get_if<std::int64_t>(&v.scalar)) {
            i = *pi;
            u = static_cast<std::uint64_t>(*pi);
            f = static_cast<double>(*pi);
        } else if (const auto* pf = std::get_if<double>(&v.scalar)) {
            f = *pf;
        } else if (const auto* pb = std::get_if<bool>(&v.scalar)) {
            u = *pb ? 1 : 0;
        } else {
            return error(errc::invalid_argument, "key '" + key + "': value does not fit its type");
        }
        put_scalar(out, v.type, u, i, f);
        return {};
    }
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(v.array_type));
    switch (v.array_type) {
    case gguf_value_type::string:
        put_le<std::uint64_t>(out, v.array_strings.size());
        for (const auto& s : v.array_strings)
            put_string(out, s);
        break;
    case gguf_value_type::f32:
    case gguf_value_type::f64:
        put_le<std::uint64_t>(out, v.array_floats.size());
        for (double f : v.array_floats)
            put_scalar(out, v.array_type, 0, 0, f);
        break;
    case gguf_value_type::i8:
    case gguf_value_type::i16:
    case gguf_value_type::i32:
    case gguf_value_type::i64:
        put_le<std::uint64_t>(out, v.array_ints.size());
        for (std::int64_t i : v.array_ints)
            put_scalar(out, v.array_type, 0, i, 0);
        break;
    case gguf_value_type::u8:
    case gguf_value_type::u16:
    case gguf_value_type::u32:
    case gguf_value_type::u64:
    case gguf_value_type::boolean:
        put_le<std::uint64_t>(out, v.array_uints.size());
        for (std::uint64_t u : v.array_uints)
            put_scalar(out, v.array_type, u, 0, 0);
        break;
    case gguf_value_type::array:
        return error(errc::invalid_argument, "key '" + key + "': nested arrays are not supported");
    }
    return {};
}

std::uint64_t pad_to(std::uint64_t n, std::uint64_t a) {
    return (n + a - 1) / a * a;
}

} // namespace

gguf_writer::~gguf_writer() {
    if (out_ != nullptr)
        std::fclose(out_);
}

void gguf_writer::add(std::string key, gguf_value value) {
    kvs_.emplace_back(std::move(key), std::move(value));
}

void gguf_writer::set_alignment(std::uint32_t alignment) {
    alignment_ = alignment;
}

void gguf_writer::add_tensor(std::string name, ggml_type type, std::uint32_t n_dims,
                             tensor_shape ne) {
    tensors_.push_back({std::move(name), type, n_dims, ne});
}

result<std::vector<std::uint8_t>> gguf_writer::header_bytes() {
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
        return error(errc::invalid_argument,
                     "alignment " + std::to_string(alignment_) + " is not a power of two");
    std::unordered_set<std::string_view> seen;
    for (const auto& [k, v] : kvs_) {
        if (k == "general.alignment")
            return error(errc::invalid_argument, "set general.alignment through set_alignment()");
        if (!seen.insert(k).second)
            return error(errc::invalid_argument, "duplicate metadata key '" + k + "'");
    }
    seen.clear();
    std::uint64_t offset = 0;
    for (auto& t : tensors_) {
        if (!seen.insert(t.name).second)
            return error(errc::invalid_argument, "duplicate tensor name '" + t.name + "'");
        if (t.n_dims < 1 || t.n_dims > 4)
            return error(errc::invalid_argument, "tensor '" + t.name + "' needs 1..4 dimensions");
        auto nb = tensor_nbytes(t.type, t.ne);
        if (!nb)
            return error(nb.error().value(), "tensor '" + t.name + "': " + nb.error().message);
        t.n_bytes = *nb;
        t.offset = offset;
        offset += pad_to(t.n_bytes, alignment_);
    }

    std::vector<std::uint8_t> out;
    put_bytes(out, "GGUF", 4);
    put_le<std::uint32_t>(out, 3);
    put_le<std::uint64_t>(out, tensors_.size());
    put_le<std::uint64_t>(out, kvs_.size() + (alignment_ != 32 ? 1 : 0));
    if (alignment_ != 32) {
        put_string(out, "general.alignment");
        BITNET_TRY(put_value(out, "general.alignment", gguf_value::u32(alignment_)));
    }
    for (const auto& [k, v] : kvs_) {
        put_string(out, k);
        BITNET_TRY(put_value(out, k, v));
    }
    for (const auto& t : tensors_) {
        put_string(out, t.name);
        put_le<std::uint32_t>(out, t.n_dims);
        for (std::uint32_t d = 0; d < t.n_dims; ++d)
            put_le<std::uint64_t>(out, t.ne[d]);
        put_le<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
        put_le<std::uint64_t>(out, t.offset);
    }
    out.resize(pad_to(out.size(), alignment_), 0);
    return out;
}

result<void> gguf_writer::put(const void* p, std::size_t n) {
    if (out_mem_ != nullptr) {
        put_bytes(*out_mem_, p, n);
    } else if (n != 0 && std::fwrite(p, 1, n, out_) != n) {
        return error(errc::io_error, "write to '" + path_ + "' failed: " + std::strerror(errno));
    }
    written_ += n;
    return {};
}

result<void> gguf_writer::begin(const std::string& path) {
    auto header = header_bytes();
    if (!header)
        return header.error();
    path_ = path;
    if (out_mem_ == nullptr) {
        out_ = std::fopen(path.c_str(), "wb");
        if (out_ == nullptr)
            return error(errc::io_error, "cannot create '" + path + "': " + std::strerror(errno));
    }
    next_tensor_ = 0;
    tensor_written_ = 0;
    written_ = 0;
    return put(header->data(), header->size());
}

result<void> gguf_writer::write_tensor_data(std::span<const std::uint8_t> bytes) {
    if (next_tensor_ < tensors_.size() &&
        (tensor_written_ != 0 || bytes.size() != tensors_[next_tensor_].n_bytes))
        return error(errc::invalid_argument, "tensor '" + tensors_[next_tensor_].name + "' needs " +
                                                 std::to_string(tensors_[next_tensor_].n_bytes) +
                                                 " bytes, got " + std::to_string(bytes.size()));
    return write_tensor_chunk(bytes);
}

result<void> gguf_writer::write_tensor_chunk(std::span<const std::uint8_t> bytes) {
    if (next_tensor_ >= tensors_.size())
        return error(errc::invalid_argument, "more tensor data than declared tensors");
    const auto& t = tensors_[next_tensor_];
    if (bytes.size() > t.n_bytes - tensor_written_)
        return error(errc::invalid_argument, "tensor '" + t.name + "' needs " +
                                                 std::to_string(t.n_bytes) + " bytes, got " +
                                                 std::to_string(tensor_written_ + bytes.size()));
    BITNET_TRY(put(bytes.data(), bytes.size()));
    tensor_written_ += bytes.size();
    if (tensor_written_ < t.n_bytes)
        return {};
    static const std::uint8_t zeros[256] = {};
    std::uint64_t pad = pad_to(t.n_bytes, alignment_) - t.n_bytes;
    while (pad > 0) {
        const auto n = std::min<std::uint64_t>(pad, sizeof zeros);
        BITNET_TRY(put(zeros, n));
        pad -= n;
    }
    ++next_tensor_;
    tensor_written_ = 0;
    return {};
}

result<void> gguf_writer::finish() {
    if (next_tensor_ != tensors_.size())
        return error(errc::invalid_argument,
                     "tensor '" + tensors_[next_tensor_].name + "' was declared but not written");
    if (out_ != nullptr) {
        const bool ok = std::fflush(out_) == 0;
        const bool closed = std::fclose(out_) == 0;
        out_ = nullptr;
        if (!ok || !closed)
            return error(errc::io_error, "cannot finish writing '" + path_ + "'");
    }
    return {};
}

result<std::vector<std::uint8_t>>
gguf_writer::to_bytes(const std::vector<std::vector<std::uint8_t>>& tensor_data) {
    std::vector<std::uint8_t> mem;
    out_mem_ = &mem;
    auto run = [&]() -> result<void> {
        BITNET_TRY(begin("<memory>"));
        for (const auto& d : tensor_data)
            BITNET_TRY(write_tensor_data(d));
        return finish();
    };
    auto r = run();
    out_mem_ = nullptr;
    if (!r)
        return r.error();
    return mem;
}

} // namespace bitnet::model
