// A model file opened by descriptor for loading. Only regular files open: a FIFO, a device or a
// directory is refused before a byte is read (a FIFO would block the open, /dev/zero never ends).
// Reads are pread calls, so a file truncated under a load is a short read, an error, never the
// SIGBUS a mapping of it would raise. The file's identity at the open (device, inode, size,
// modification and change times) lets a load tell that the file changed while it read it.
#pragma once

#include "common/error.hpp"

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

namespace bitnet::model {

/// Set by the owner of a load to end it early; readers check it between chunks.
using cancel_flag = std::atomic<bool>;

struct file_identity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    friend bool operator==(const file_identity&, const file_identity&) = default;
};

class regular_file {
public:
    /// Opens `path` read-only. Errors: invalid_argument for a path with a NUL byte, io_error when
    /// it cannot be opened or is "not a regular file" (the message names what it is instead).
    [[nodiscard]] static result<regular_file> open(const std::string& path);

    regular_file(regular_file&& o) noexcept;
    regular_file& operator=(regular_file&& o) noexcept;
    regular_file(const regular_file&) = delete;
    regular_file& operator=(const regular_file&) = delete;
    ~regular_file();

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// The identity at the open; its size is the size every read is checked against.
    [[nodiscard]] const file_identity& identity() const noexcept { return id_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return id_.size; }

    /// Reads exactly `dst.size()` bytes at `offset`. io_error when the file ends before (it was
    /// truncated since the open) or the read fails.
    [[nodiscard]] result<void> read_at(std::uint64_t offset, std::span<std::uint8_t> dst) const;
    /// io_error "changed while it was being loaded" unless the open file and the file the path
    /// names now both still have the identity of the open (a truncation, an in-place overwrite or
    /// a replacement by rename since then all fail it).
    [[nodiscard]] result<void> check_unchanged() const;

private:
    regular_file(int fd, std::string path, file_identity id)
        : fd_(fd)
        , path_(std::move(path))
        , id_(id) {}
    int fd_ = -1;
    std::string path_;
    file_identity id_;
};

/// errc::cancelled when `cancel` is set (a null flag never is).
[[nodiscard]] result<void> check_cancel(const cancel_flag* cancel, const std::string& what);

} // namespace bitnet::model
