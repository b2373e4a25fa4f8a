// bitnet::errc <-> caf::error, in one place, and the registration of every message type.
#pragma once

#include "common/error.hpp"

#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <string>

namespace bitnet::msg {

/// The CAF error category of our errc values.
[[nodiscard]] caf::atom_value error_category() noexcept;

/// An errc with its message as a caf::error (code = errc value, context = the message, then the
/// Retry-After seconds and the field at fault when there are any).
[[nodiscard]] caf::error to_caf_error(const bitnet::error& e);
[[nodiscard]] caf::error to_caf_error(errc code, std::string message);
/// An overload refusal (queue_full) with the seconds a client should wait (HTTP Retry-After).
[[nodiscard]] caf::error to_caf_error(errc code, std::string message, std::uint32_t retry_after_s);
/// The Retry-After seconds an error carries, 0 when none.
[[nodiscard]] std::uint32_t retry_after_of(const caf::error& e);

/// Back to our vocabulary (message and field at fault). CAF's own errors map to the nearest errc:
/// request timeouts to `timeout`, a dead receiver to `cancelled`... anything else is `internal`
/// with CAF's text.
[[nodiscard]] bitnet::error from_caf_error(const caf::error& e);

/// Registers every message type, the typed handles and the error category with `cfg`.
void register_messages(caf::actor_system_config& cfg);

} // namespace bitnet::msg
