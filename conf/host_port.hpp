// "HOST:PORT" endpoints of the cluster keys (cluster_listen, cluster_join) and the checks on them
// that the loader and the cluster's start-up share: one parser, so the address the loader
// accepted is the address the middleman is given.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace bitnet::conf {

/// One endpoint. `host` is an IPv4 address, a DNS name, or an IPv6 address WITHOUT its brackets
/// (the form sockets and CAF's middleman take); `port` 0 = ephemeral (a listener in tests).
struct host_port {
    std::string host;
    std::uint16_t port = 0;
    friend bool operator==(const host_port&, const host_port&) = default;
};

/// Parses "HOST:PORT": "10.0.0.5:7070", "node-1.peers.ns.svc.cluster.local:7070",
/// "[::1]:7070". Refused, with a message saying why: an empty host or port, a port above 65535
/// or not decimal, an IPv6 address without brackets, an all-numeric host that is not a valid
/// IPv4 address, a name that breaks RFC 1123 (labels of 1..63 letters, digits and inner '-',
/// 253 characters in all).
[[nodiscard]] result<host_port> parse_host_port(std::string_view text);

/// What is wrong with one `trusted_proxies` entry (an IP address or an ADDRESS/PREFIX network,
/// IPv4 or IPv6), or "" when nothing is.
[[nodiscard]] std::string trusted_proxy_problem(std::string_view entry);

/// "HOST:PORT" again, IPv6 hosts in brackets (log lines, --print-config).
[[nodiscard]] std::string to_string(const host_port& hp);

/// True for "localhost" (any case), IPv4 127.0.0.0/8, "::1" and IPv4-mapped 127.x
/// ("::ffff:127.0.0.1"); brackets around an IPv6 host are accepted. Decides whether plaintext
/// peer links (cluster_insecure) are allowed: traffic that never leaves the machine.
[[nodiscard]] bool is_loopback_host(std::string_view host);

/// A node name: 1..64 characters, each a letter, digit, '.', '_' or '-' (so it is safe in log
/// lines, metric labels and file names). The empty string is not one: an empty node_name key
/// means "the host name", which the caller resolves at start-up and checks with this too.
[[nodiscard]] bool is_valid_node_name(std::string_view name);

} // namespace bitnet::conf
