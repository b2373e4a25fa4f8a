// The cluster actor of one node: several bitnet-server processes made one server over CAF's
// middleman (plain TCP for local tests, TLS with mutual certificates through CAF's OpenSSL module
// otherwise).
//   - Membership: a node publishes this actor on its cluster port and dials the addresses it was
//     told to join; each side answers a join with its report, whose member list lets every node
//     dial every other one (a full mesh: one link per pair). A node knows its peers by name; one
//     that restarts under its name comes back with a new incarnation.
//   - Heartbeats: every `heartbeat` each node sends every peer its report (its replicas with their
//     load, its models, the members it knows). A peer is suspect after half the failure timeout
//     without one and down after the whole of it (a hung process); a broken link makes it down at
//     once (a crashed one). A node that was itself paused judges nobody on waking: it first
//     listens again.
//   - Routing state: at every tick admission gets the replicas of the nodes that are up; when a
//     node goes down admission drops its replicas at once and its stream relay moves the streams
//     that ran there (actors/cluster/stream_relay.hpp). A node that comes back is routed to again.
//   - Trust (actors/cluster/peer_identity.hpp, common/peer_roles.hpp): over TLS a join carries the
//     node's certificate and a signature binding its name to its process and this link, so a
//     peer cannot join under another node's name; its roles come from the certificate. Only a
//     member's own process may heartbeat under its name. Admission routes only to members with
//     the replica role, and this node's replicas take work only from members with the router
//     role (actors/cluster/peer_gate.hpp).
//   - Rolling operations (actors/cluster_rolls.hpp): load, rollback and unload run node after node
//     through each node's own supervisor; a failure stops the roll and undoes it. A peer's
//     supervisor is never handed out: each node's part goes to its cluster actor as a node_order
//     proven with the admin key (actors/cluster/order_proof.hpp), and only this node's own actors
//     may start a roll here.
#pragma once

#include "actors/cluster/peer_identity.hpp"
#include "common/peer_roles.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

struct cluster_options {
    std::string node_name;
    /// false: a node alone (no cluster port); it still answers `members` with itself.
    bool clustered = false;
    std::vector<std::string> join; ///< "host:port" of members to dial
    bool tls = false;              ///< dial through CAF's OpenSSL module (mutual certificates)
    std::chrono::milliseconds heartbeat{250};
    std::chrono::milliseconds failure_timeout{3000};
    /// A member down this long is forgotten: no longer listed, dialed or reported (a node that
    /// comes back joins again). Zero: never.
    std::chrono::milliseconds forget_after{300000};
    /// Redials of an unreachable member or --join address wait 1 s, then twice as long after
    /// each failure, up to this, each wait ±20 % at random (peers that lost the same node do not
    /// dial it in step).
    std::chrono::milliseconds max_dial_backoff{30000};
    msg::admission_actor admission;
    msg::supervisor_actor supervisor;
    /// This node's admin settings (admin_api_keys, admin_open): a peer's model operation runs here
    /// only with a proof one of these keys gives (actors/cluster/order_proof.hpp), or with no key
    /// configured and admin_open. The roll this node runs proves its orders with the key of the
    /// HTTP request that started it.
    std::vector<std::string> admin_keys;
    bool admin_open = false;
    /// Over TLS: this node's certificate and key, which sign its joins, and the cluster CA, which
    /// checks its peers' (actors/cluster/peer_identity.hpp). Null in insecure mode, where a peer's
    /// name and roles are what it says.
    std::shared_ptr<const node_credential> credential;
    std::shared_ptr<const peer_checker> checker;
    /// Every node holds one shared certificate (the shared-Secret recipe): a peer's name is not
    /// bound to its certificate, only its roles are.
    bool shared_certificate = false;
    /// This node's own roles (its certificate's over TLS, what it declares in insecure mode):
    /// without router it places nothing on peers; peers check the rest.
    peer_roles roles = all_roles;
    /// Test hook (builds with test hooks, conf test_hooks): route to peers' replicas as if this
    /// node had the router role, so a test sees what the peers' own checks do with it.
    bool route_without_router_role = false;
    /// Members by state after every tick (bitnet_cluster_nodes{state}), this node included.
    std::function<void(std::uint32_t up, std::uint32_t suspect, std::uint32_t down)> on_nodes;
    /// A heartbeat or join crossed the link to `peer` ("in" or "out"), with its size in bytes.
    std::function<void(const std::string& peer, const char* direction, std::uint64_t bytes)>
        on_link;
    /// The time between two heartbeats of `peer` as this node received them (the interval plus
    /// whatever delayed either side: a starved sender, a busy receiver, the network).
    std::function<void(const std::string& peer, double seconds)> on_heartbeat_gap;
    /// `peer` turned suspect (no heartbeat for half the failure timeout).
    std::function<void(const std::string& peer)> on_suspect;
    /// A dial of a member's or a seed's address that did not connect.
    std::function<void()> on_dial_failed;
    /// `peer` turned down (no heartbeat for the failure timeout, or its link broke).
    std::function<void(const std::string& peer)> on_down;
    /// A peer refused: `reason` proof (its join proof failed) | name_taken (a second process
    /// under the name of a member linked and up) | order (a model order or a roll from a peer
    /// without the admin role or key, or from another process).
    std::function<void(const char* reason)> on_refused;
};

[[nodiscard]] msg::cluster_actor spawn_cluster_node(caf::actor_system& sys, cluster_options opt);

/// "host:port" (an IPv6 host in brackets) split; nothing when it is not of that form.
struct peer_address {
    std::string host;
    std::uint16_t port = 0;
};
[[nodiscard]] bool parse_peer_address(const std::string& text, peer_address& out);

} // namespace bitnet::actors
