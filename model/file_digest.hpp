// SHA-256 of a model file (OpenSSL), streamed in chunks: a version's identity and the check that
// a file to roll back to is still the one that was served.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>

namespace bitnet::model {

struct file_digest {
    std::string sha256_hex; ///< 64 lower-case hex digits
    std::uint64_t size_bytes = 0;
};

/// Reads the whole file. Errors: io_error (cannot open or read, with the path and the reason).
[[nodiscard]] result<file_digest> sha256_file(const std::string& path);

} // namespace bitnet::model
