// The bytes of a model file (or of its first part), read with pread into memory of our own: no
// mapping of the file exists, so nothing that reads these bytes can fault when the file's owner
// truncates or rewrites it. The memory is an anonymous private mapping, so parts that were copied
// into another layout can be handed back to the OS page by page (release_pages) while a load runs.
#pragma once

#include "common/error.hpp"
#include "model/gguf/regular_file.hpp"

#include <cstdint>
#include <memory>
#include <span>

namespace bitnet::model {

class file_image {
public:
    /// Reads the first `n_bytes` of `file` (at most its size), checking `cancel` between chunks.
    /// Errors: io_error when the file is shorter than at its open or cannot be read, or the
    /// memory cannot be had; cancelled.
    [[nodiscard]] static result<std::shared_ptr<const file_image>>
    read(const regular_file& file, std::uint64_t n_bytes, const cancel_flag* cancel = nullptr);

    file_image(const file_image&) = delete;
    file_image& operator=(const file_image&) = delete;
    ~file_image();

    [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
    /// Hands the whole pages inside `range` (a part of bytes()) back to the OS; they read as zeros
    /// afterwards, so only for bytes that will not be read again.
    void release_pages(std::span<const std::uint8_t> range) const noexcept;

private:
    file_image(std::uint8_t* data, std::size_t size)
        : data_(data)
        , size_(size) {}
    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace bitnet::model
