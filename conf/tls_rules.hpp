// The rules of the HTTPS keys (tls_cert, tls_key): both or neither, each a readable file. That
// the files hold a certificate and its key is checked where OpenSSL is (the executable builds
// the listener's context at start-up and exits with a config error when it fails). Internal to
// conf/.
#pragma once

#include "common/error.hpp"
#include "conf/server_config.hpp"

namespace bitnet::conf::detail {

/// The HTTPS keys' cross-key and file rules (part of conf::validate).
[[nodiscard]] result<void> validate_tls(const server_config& cfg);

} // namespace bitnet::conf::detail
