// RAII read-only memory map of a whole file.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace bitnet::model {

class mmap_file {
public:
    /// Maps `path` read-only; io_error naming the path and errno text on failure.
    [[nodiscard]] static result<std::shared_ptr<const mmap_file>> open(const std::string& path);

    mmap_file(const mmap_file&) = delete;
    mmap_file& operator=(const mmap_file&) = delete;
    ~mmap_file();

    [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
    /// Drops the whole pages inside `range` (a part of bytes()) from the resident set.
    void release_pages(std::span<const std::uint8_t> range) const noexcept;

private:
    mmap_file(const std::uint8_t* data, std::size_t size)
        : data_(data)
        , size_(size) {}
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace bitnet::model
