// The ids and the priority every layer shares: defined here once, with no CAF in the header, so
// the plain scheduling policy (actors/batcher/sched_policy.hpp) uses the very types the messages
// carry.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::msg {

using request_id = std::uint64_t;
using token_id = std::int32_t; ///< model/ stores token ids as std::int32_t

enum class priority : std::uint8_t { high = 0, normal = 1, low = 2 };
inline constexpr std::size_t n_priorities = 3;

/// A request's speculative decoding (its `speculative` field): the server's default
/// (config `speculative`), off, or auto (drafts verified where the server allows them).
enum class spec_mode : std::uint8_t { server_default = 0, off = 1, on = 2 };

} // namespace bitnet::msg
