// The stream relay: one per node, owned by its admission. It carries the requests this node's
// clients sent and admission placed on another node's replica:
//   - it submits each one there, naming itself as the request's relay, so the remote batcher sends
//     the request's output here batched per step (one stream_batch per step per node, however
//     many streams and tokens), and it hands each event to the request's sink;
//   - it keeps what every stream has delivered so far (its generated token ids), so that when the
//     node running it is lost (a broken link, or missed heartbeats:
//     actors/cluster/cluster_node.hpp) the stream continues on another replica of the same version:
//     that replica prefills the prompt plus the delivered tokens (computed as they were first
//     computed, msg::generate_request:: n_resumed) and resumes the sampler where it stopped. The
//     client sees one stream: the same request id, no token twice (events from the lost placement
//     are dropped), none lost;
//   - the same when the replica's model stops under the stream while its node lives (a crash and
//     its restart in place, an unload or rollback there: the batcher fails its requests with
//     `cancelled`): admission is told never to choose that batcher again;
//   - when no replica of that version is left, the stream ends with replica_lost (HTTP 503), or
//     with the stopped replica's worker_stopped (503).
// Requests placed on this node's own replica never pass here: they cannot outlive their node.
#pragma once

#include "messages/interfaces.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct relay_options {
    std::string node_name; ///< for logs
    /// Picks the replica a lost stream continues on (admission's `place`).
    msg::admission_actor admission;
    /// A stream moved to another replica (bitnet_requests_migrated_total).
    std::function<void()> on_migrated;
    /// A stream_batch arrived from `peer` (node name): its serialized size in bytes (the per-link
    /// counters).
    std::function<void(const std::string& peer, std::uint64_t bytes)> on_batch;
};

[[nodiscard]] msg::relay_actor spawn_stream_relay(caf::actor_system& sys, relay_options opt);

} // namespace bitnet::actors
