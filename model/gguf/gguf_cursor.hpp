// The bounds-checked reader every GGUF parse goes through: each read checks that its bytes lie
// inside the span before touching one, so a malformed file yields an error naming the offset
// instead of a crash. Internal to the GGUF reader (gguf_reader.cpp, gguf_metadata.cpp).
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace bitnet::model::gguf_detail {

inline std::string at(std::uint64_t off) {
    return "at offset " + std::to_string(off);
}

template <class T>
T load(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
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

} // namespace bitnet::model::gguf_detail
