// Admission: the front door every request passes. It refuses the caller's errors it can see
// against the serving version (a token id outside the vocabulary, a prompt the context or the KV
// pool can never hold: 400s, so one bad request never reaches a batched step and a too-long
// prompt is never a 503 that clients retry forever), then refuses early what the system cannot take
// (503 queue_full with a Retry-After estimated from the measured drain rate, draining, unknown
// model), refuses a key past its quota (429 with Retry-After, actors/admission/key_quota.hpp), and
// delegates the rest to the model's batcher, which answers the caller directly.
// A text or chat prompt is first tokenized by the text actor (actors/supervisor/text_actor.hpp) of
// the version the alias serves when the request arrives, and then checked and queued on that same
// version's batcher, even if the alias flips in between: the version that tokenizes a request is
// the version that runs it. /v1/tokenize and /v1/detokenize go to the serving version's text actor
// through admission too.
// Queue depths come from polling each batcher's stats every `poll_interval` plus what was
// admitted since, so the caps hold without a round trip per request; a request the caps would
// refuse only on account of those (they may have finished since) asks the batcher first and is
// decided on what waits now (admission_queue.cpp).
// In a cluster the replicas of other nodes join the choice (the cluster actor sends them with the
// load their heartbeats carried): a request goes to the replica of its alias with the least
// outstanding work (tokens to prefill and to generate), here or there. One placed on another node
// goes through this node's stream relay (actors/cluster/stream_relay.hpp, spawned and owned here),
// which carries its stream on to another replica if that node is lost.
#pragma once

#include "actors/admission/key_quota.hpp"
#include "common/error.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct admission_options {
    std::string default_model; ///< alias used when a request names none
    /// The aliases the server starts with: /health/ready waits until each is served or has
    /// failed (a later load or reload of an alias never takes readiness back).
    std::vector<std::string> startup_models;
    std::uint32_t max_waiting_requests = 256;
    std::uint64_t max_waiting_prompt_tokens = 262144;
    std::chrono::milliseconds poll_interval{20};
    quota_limits key_quota; ///< per API key (requests without one share a bucket); 0 = off
    /// This node's name in a cluster (replica views, logs); empty on a single node.
    std::string node_name;
    /// The stream relay's metrics hooks (actors/cluster/stream_relay.hpp): a stream moved to
    /// another replica; a step's batch of stream output arrived from a peer (its bytes).
    std::function<void()> on_migrated;
    std::function<void(const std::string& peer, std::uint64_t bytes)> on_relay_batch;
};

[[nodiscard]] msg::admission_actor spawn_admission(caf::actor_system& sys, admission_options opt);

/// What a request must fit, from the serving version's executor_info. 0 = unknown: not checked
/// (the batcher's policy still refuses what its own limits cannot hold).
struct request_limits {
    std::uint32_t n_vocab = 0;
    std::uint32_t n_ctx = 0;
    std::uint32_t kv_block_tokens = 0;
    std::uint32_t kv_blocks_total = 0;
};
[[nodiscard]] request_limits limits_of(const msg::executor_info& info);

/// What another node needs of a replica's executor_info (its limits, format and device), without
/// the engine's description and kernel timings: those never change yet were 80 % of every
/// heartbeat.
[[nodiscard]] msg::executor_info routing_info(const msg::executor_info& info);

/// The caller's errors in `req`: prompt_too_long (param "prompt") when the prompt leaves no room
/// for one generated token in the context window or in the whole KV pool; invalid_argument when a
/// prompt id (param "prompt"), a stop token id (param "stop_token_ids") or a logit_bias id
/// (param "logit_bias") is outside the vocabulary. Messages name the limit and the offending
/// value.
[[nodiscard]] result<void> check_request(const request_limits& lim,
                                         const msg::generate_request& req);

/// Seconds a refused client should wait: the waiting work over the measured drain rate
/// (requests finished per second), at least 1 and at most 60; 1 when nothing was measured yet.
[[nodiscard]] std::uint32_t retry_after_seconds(std::uint64_t waiting, double drain_per_s);

} // namespace bitnet::actors
