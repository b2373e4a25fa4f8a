// Admission: the front door every request passes. It refuses early what the system cannot take
// (503 queue_full with a Retry-After estimated from the measured drain rate, draining, unknown
// model), refuses a key past its quota (429 with Retry-After, actors/key_quota.hpp), and
// delegates the rest to the model's batcher, which answers the caller directly.
// Queue depths come from polling each batcher's stats every `poll_interval` plus what was
// admitted since, so the caps hold without a round trip per request.
#pragma once

#include "actors/key_quota.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct admission_options {
    std::string default_model; ///< alias used when a request names none
    std::uint32_t max_waiting_requests = 256;
    std::uint64_t max_waiting_prompt_tokens = 262144;
    std::chrono::milliseconds poll_interval{20};
    quota_limits key_quota; ///< per API key (requests without one share a bucket); 0 = off
};

[[nodiscard]] msg::admission_actor spawn_admission(caf::actor_system& sys, admission_options opt);

/// Seconds a refused client should wait: the waiting work over the measured drain rate
/// (requests finished per second), at least 1 and at most 60; 1 when nothing was measured yet.
[[nodiscard]] std::uint32_t retry_after_seconds(std::uint64_t waiting, double drain_per_s);

} // namespace bitnet::actors
