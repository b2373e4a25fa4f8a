#include "conf/cluster_rules.hpp"

#include "conf/host_port.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

namespace bitnet::conf::detail {

std::string unreadable(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return "'" + path + "' is a directory, not a file";
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return "cannot read '" + path + "' (" + std::strerror(errno) + ")";
    return {};
}

/// The cluster keys' rules that involve several keys or the file system. Peer links are either
/// mutual TLS or explicitly plaintext on loopback, never plaintext by default.
result<void> validate_cluster(const server_config& cfg) {
    if (cfg.cluster_heartbeat_ms * 2ull >= cfg.cluster_failure_timeout_ms)
        return fail("cluster_heartbeat_ms",
                    std::to_string(cfg.cluster_heartbeat_ms) +
                        " must be below half of cluster_failure_timeout_ms (" +
                        std::to_string(cfg.cluster_failure_timeout_ms) +
                        "): a peer must miss at least two heartbeats before it is declared failed");
    const std::array<std::pair<std::string_view, const std::string*>, 3> tls{{
        {"cluster_cert", &cfg.cluster_cert},
        {"cluster_key", &cfg.cluster_key},
        {"cluster_ca", &cfg.cluster_ca},
    }};
    const auto tls_set = static_cast<std::size_t>(
        std::count_if(tls.begin(), tls.end(), [](const auto& t) { return !t.second->empty(); }));
    if (cfg.cluster_listen.empty()) {
        // Cluster settings without a listener would be silently ignored: say so instead.
        if (!cfg.cluster_join.empty())
            return fail("cluster_join", "needs cluster_listen (--cluster-listen HOST:PORT): a "
                                        "node that joins peers must accept their links too");
        if (cfg.cluster_insecure != 0)
            return fail("cluster_insecure", "is set but cluster_listen is empty (no cluster)");
        for (const auto& [key, value] : tls)
            if (!value->empty())
                return fail(key, "is set but cluster_listen is empty (no cluster)");
        return {};
    }
    if (tls_set != 0 && tls_set != tls.size()) {
        for (const auto& [key, value] : tls)
            if (value->empty())
                return fail(key, "is missing: peer TLS needs cluster_cert, cluster_key and "
                                 "cluster_ca together (or none of them)");
    }
    const auto listen = parse_host_port(cfg.cluster_listen);
    if (!listen)
        return fail("cluster_listen", listen.error().message);
    if (cfg.cluster_insecure != 0) {
        if (tls_set != 0)
            return fail("cluster_insecure", "and cluster_cert/cluster_key/cluster_ca are both "
                                            "set: choose TLS (the files) or plain TCP "
                                            "(--cluster-insecure), not both");
        if (!is_loopback_host(listen->host))
            return fail("cluster_insecure",
                        "--cluster-insecure sends peer traffic in the clear: only allowed when "
                        "--cluster-listen is a loopback address (cluster_listen is '" +
                            cfg.cluster_listen + "')");
        for (const auto& peer : cfg.cluster_join) {
            const auto hp = parse_host_port(peer);
            if (!hp || !is_loopback_host(hp->host))
                return fail("cluster_join",
                            "'" + peer +
                                "' is not a loopback address: --cluster-insecure sends peer "
                                "traffic in the clear, so every --join address must be loopback");
        }
        if (cfg.cluster_shared_certificate != 0)
            return fail("cluster_shared_certificate",
                        "is about TLS certificates; an insecure cluster has none");
        if (cfg.cluster_insecure_acknowledged == 0)
            return fail("cluster_insecure",
                        "lets any process on this machine that reaches the cluster port join as "
                        "a peer (it is routed requests and their prompts, and places requests "
                        "without an API key; README, \"Scaling out\"): add "
                        "--cluster-insecure-acknowledged to run it anyway (tests, trials on one "
                        "machine), or use TLS (--cluster-cert/--cluster-key/--cluster-ca)");
        return {};
    }
    if (tls_set == 0)
        return fail("cluster_listen",
                    "peer links need TLS: set cluster_cert, cluster_key and cluster_ca "
                    "(--cluster-cert/--cluster-key/--cluster-ca), or --cluster-insecure for a "
                    "loopback-only test cluster");
    if (!cfg.cluster_roles.empty())
        return fail("cluster_roles",
                    "over TLS a node's roles come from its certificate (subjectAltName URIs "
                    "urn:bitnet-serve:role:NAME; deploy/cluster/make-certs.sh NODE:ROLES), not "
                    "from its own configuration");
    for (const auto& [key, value] : tls)
        if (auto why = unreadable(*value); !why.empty())
            return fail(key, why);
    return {};
}

} // namespace bitnet::conf::detail
