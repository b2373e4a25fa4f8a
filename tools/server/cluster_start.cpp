#include "cluster_start.hpp"

#include "actors/cluster/cluster_node.hpp"
#include "actors/cluster/peer_gate.hpp"
#include "actors/cluster/peer_identity.hpp"
#include "basp_guard.hpp"
#include "conf/host_port.hpp"
#include "http/observe/metrics.hpp"
#include "tls_error_queue.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <random>

#include <unistd.h>

namespace bitnet::server {

bool clustered(const conf::server_config& cfg) {
    return !cfg.cluster_listen.empty();
}

result<std::string> node_name_of(const conf::server_config& cfg) {
    if (!cfg.node_name.empty())
        return cfg.node_name;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || !conf::is_valid_node_name(host))
        return error{errc::invalid_argument,
                     "the host name is not a valid node name: set node_name (--node-name) to 1..64 "
                     "letters, digits, '.', '_', '-'"};
    return std::string(host);
}

void load_remoting(caf::actor_system_config& sys_cfg, const conf::server_config& cfg) {
    if (!clustered(cfg))
        return;
    sys_cfg.load<caf::io::middleman>();
    if (cfg.cluster_insecure != 0)
        return;
    sys_cfg.load<caf::openssl::manager>();
    // With these set CAF's OpenSSL module requires a peer certificate signed by the CA file on
    // both sides of every link (mutual authentication).
    sys_cfg.openssl_certificate = cfg.cluster_cert;
    sys_cfg.openssl_key = cfg.cluster_key;
    sys_cfg.openssl_cafile = cfg.cluster_ca;
}

std::uint64_t first_request_id(const conf::server_config& cfg) {
    if (!clustered(cfg))
        return 1;
    std::random_device rd;
    return (std::uint64_t{rd() & 0xffffffu} << 32) + 1;
}

namespace {

/// This node's identity and its peers' checker over TLS (its certificate must name it and
/// verify against the cluster CA, so a misissued one fails at start, not at every join), or the
/// roles it declares in insecure mode.
result<void> load_trust(const conf::server_config& cfg, const std::string& node,
                        actors::cluster_options& co) {
    if (!co.clustered)
        return {};
    if (!co.tls) {
        co.roles = all_roles;
        if (!cfg.cluster_roles.empty()) {
            auto roles = parse_roles(cfg.cluster_roles);
            if (!roles)
                return roles.error();
            co.roles = *roles;
        }
        return {};
    }
    auto credential = actors::node_credential::load(cfg.cluster_cert, cfg.cluster_key);
    if (!credential)
        return credential.error();
    auto checker = actors::peer_checker::load(cfg.cluster_ca);
    if (!checker)
        return checker.error();
    co.credential = *credential;
    co.checker = *checker;
    co.shared_certificate = cfg.cluster_shared_certificate != 0;
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const actors::join_claim self_claim{node, "self", "self", now_ms};
    const auto v = co.checker->check(co.credential->chain_pem(), co.credential->sign(self_claim),
                                     self_claim, self_claim.issued_ms, co.shared_certificate);
    if (!v.refusal.empty())
        return error{errc::invalid_argument,
                     "cluster_cert '" + cfg.cluster_cert + "' cannot serve node '" + node +
                         "': " + v.refusal +
                         (co.shared_certificate
                              ? std::string{}
                              : " (a certificate names its node in its common name or a DNS "
                                "subjectAltName; cluster_shared_certificate=1 lifts that for one "
                                "certificate shared by every node)")};
    co.roles = v.roles;
    spdlog::info("cluster: this node's certificate gives it the roles {}", roles_text(v.roles));
    return {};
}

} // namespace

result<msg::cluster_actor> start_cluster(caf::actor_system& sys, const conf::server_config& cfg,
                                         const std::string& node, msg::admission_actor admission,
                                         msg::supervisor_actor supervisor,
                                         std::shared_ptr<http::metrics> metrics,
                                         std::unique_ptr<basp_guard>& guard) {
    actors::cluster_options co;
    co.node_name = node;
    co.clustered = clustered(cfg);
    co.join = cfg.cluster_join;
    co.tls = co.clustered && cfg.cluster_insecure == 0;
    co.heartbeat = std::chrono::milliseconds(cfg.cluster_heartbeat_ms);
    co.failure_timeout = std::chrono::milliseconds(cfg.cluster_failure_timeout_ms);
    co.forget_after = std::chrono::milliseconds(cfg.cluster_forget_after_ms);
    co.max_dial_backoff = std::chrono::milliseconds(cfg.cluster_max_dial_backoff_ms);
    co.admission = std::move(admission);
    co.supervisor = std::move(supervisor);
    co.admin_keys = cfg.admin_api_keys;
    co.admin_open = cfg.admin_open != 0;
    if (auto trust = load_trust(cfg, node, co); !trust)
        return trust.error();
#ifdef BITNET_TEST_HOOKS
    co.route_without_router_role = cfg.test_hooks != 0;
#endif
    if (co.clustered) {
        metrics->cluster_node(node);
        co.on_nodes = [metrics](std::uint32_t up, std::uint32_t suspect, std::uint32_t down) {
            metrics->cluster_nodes(up, suspect, down);
        };
        co.on_link = [metrics](const std::string& peer, const char* direction,
                               std::uint64_t bytes) {
            metrics->link(peer, direction, "heartbeat", bytes);
        };
        co.on_heartbeat_gap = [metrics](const std::string& peer, double seconds) {
            metrics->heartbeat_gap(peer, seconds);
        };
        co.on_suspect = [metrics](const std::string& peer) { metrics->suspect(peer); };
        co.on_down = [metrics](const std::string& peer) { metrics->down(peer); };
        co.on_dial_failed = [metrics] { metrics->dial_failed(); };
        co.on_refused = [metrics](const char* reason) { metrics->cluster_refused(reason); };
        on_cluster_tls_refusal([metrics] { metrics->cluster_refused("tls"); });
        actors::peer_gate::process().on_refused(
            [metrics] { metrics->cluster_refused("placement"); });
    }
    auto cluster = actors::spawn_cluster_node(sys, co);
    std::string address;
    if (co.clustered) {
        auto hp = conf::parse_host_port(cfg.cluster_listen);
        if (!hp)
            return hp.error();
        const char* bind_to = hp->host.empty() ? nullptr : hp->host.c_str();
        // Insecure: the middleman on a loopback port of its own, the guard on cluster_listen.
        auto port = co.tls ? caf::openssl::publish(cluster, hp->port, bind_to, true)
                           : sys.middleman().publish(cluster, 0, "127.0.0.1", true);
        if (!port) {
            caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
            return error{errc::io_error, "cannot listen for cluster peers on " +
                                             cfg.cluster_listen + ": " +
                                             caf::to_string(port.error())};
        }
        if (!co.tls) {
            auto g = basp_guard::start(hp->host, hp->port, *port, {},
                                       [metrics] { metrics->cluster_refused("basp"); });
            if (!g) {
                caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
                return g.error();
            }
            guard = std::move(*g);
            *port = guard->port();
        }
        // Peers dial what the node tells them. A wildcard bind is reached by the node's own
        // entry in the join list when it has one (a StatefulSet lists every pod's DNS name,
        // "NAME.peers.ns.svc..."), else by its name.
        const bool wildcard = hp->host.empty() || hp->host == "0.0.0.0" || hp->host == "::";
        std::string host = wildcard ? node : hp->host;
        if (wildcard)
            for (const auto& j : cfg.cluster_join)
                if (auto jp = conf::parse_host_port(j);
                    jp && (jp->host == node || jp->host.rfind(node + ".", 0) == 0)) {
                    host = jp->host;
                    break;
                }
        address = conf::to_string({host, *port});
    }
    caf::anon_send(cluster, msg::ready_atom_v, address);
    return cluster;
}

} // namespace bitnet::server
