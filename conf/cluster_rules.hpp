// The rules of the cluster keys that involve several keys or the file system (peer links are
// either mutual TLS or explicitly plaintext on loopback), and the cross-key error both this and
// the loader's other rules report with. Internal to conf/.
#pragma once

#include "common/error.hpp"
#include "conf/server_config.hpp"

#include <string>
#include <string_view>

namespace bitnet::conf::detail {

/// A cross-key validation error: names the key (the values may come from several layers).
[[nodiscard]] inline error fail(std::string_view key, const std::string& what) {
    return {errc::invalid_argument, "config key '" + std::string(key) + "': " + what};
}

/// What is wrong with reading `path` as a file, or "" when it opens.
[[nodiscard]] std::string unreadable(const std::string& path);

/// The cluster keys' cross-key and file rules (part of conf::validate).
[[nodiscard]] result<void> validate_cluster(const server_config& cfg);

} // namespace bitnet::conf::detail
