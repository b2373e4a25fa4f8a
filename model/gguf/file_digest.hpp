// SHA-256 of a model file (OpenSSL), streamed in chunks: a version's identity and the check that
// a file to roll back to is still the one that was served.
#pragma once

#include "common/error.hpp"
#include "model/gguf/regular_file.hpp"

#include <cstdint>
#include <string>

namespace bitnet::model {

struct file_digest {
    std::string sha256_hex; ///< 64 lower-case hex digits
    std::uint64_t size_bytes = 0;
};

/// Reads the whole file, checking `cancel` between chunks. Errors: io_error (cannot read, not a
/// regular file, changed size while read, with the path and the reason), cancelled.
[[nodiscard]] result<file_digest> sha256_file(const regular_file& file,
                                              const cancel_flag* cancel = nullptr);
/// Opens `path` (regular files only) and hashes it.
[[nodiscard]] result<file_digest> sha256_file(const std::string& path,
                                              const cancel_flag* cancel = nullptr);

} // namespace bitnet::model
