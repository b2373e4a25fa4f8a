// The cluster side of bitnet-server's start-up (actors/cluster/cluster_node.hpp): the actor
// system's remoting modules (CAF's middleman, and its OpenSSL module for mutual-certificate TLS),
// the node's name, and the cluster actor published on the cluster port. A node without
// --cluster-listen still gets a cluster actor (GET /v1/cluster answers with it alone) but loads no
// remoting at all.
#pragma once

#include "common/error.hpp"
#include "conf/server_config.hpp"
#include "messages/interfaces.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace bitnet::http {
class metrics;
}

namespace bitnet::server {

/// Whether the configuration makes this process a cluster node.
[[nodiscard]] bool clustered(const conf::server_config& cfg);

/// The node's name: node_name, else the host name (checked like a configured one).
[[nodiscard]] result<std::string> node_name_of(const conf::server_config& cfg);

/// Loads the middleman (and the OpenSSL module with the certificate files) into `sys_cfg` when
/// the node is clustered. Must run before the actor system is made.
void load_remoting(caf::actor_system_config& sys_cfg, const conf::server_config& cfg);

/// A first request id unique to this node and start (a random prefix in the high bits): ids stay
/// unique across the nodes a request passes through.
[[nodiscard]] std::uint64_t first_request_id(const conf::server_config& cfg);

class basp_guard;

/// Spawns the cluster actor, publishes it on cluster_listen (when clustered) and starts it.
/// Fails (with why) when the port cannot be bound. In insecure mode the middleman listens on a
/// loopback port of its own and `guard` (tools/server/basp_guard.hpp) owns cluster_listen; the
/// caller keeps it for the life of the process.
[[nodiscard]] result<msg::cluster_actor>
start_cluster(caf::actor_system& sys, const conf::server_config& cfg, const std::string& node,
              msg::admission_actor admission, msg::supervisor_actor supervisor,
              std::shared_ptr<http::metrics> metrics, std::unique_ptr<basp_guard>& guard);

} // namespace bitnet::server
