// The contract's Prometheus metrics (tests/data/contract/http-api-metrics.md), registered once,
// updated from the HTTP layer (request outcomes, latencies) and from polled queue stats (gauges).
// prometheus-cpp families are thread-safe, so no actor owns them; /metrics serializes the registry.
#pragma once

#include "common/memory_tables.hpp"
#include "messages/types.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bitnet::http {

/// What /v1/stats reports beside the queues (http/openapi.json): the batch sizes seen since start,
/// token rates over the last 10 s and 60 s, and admission refusals by reason.
struct live_stats {
    std::uint64_t steps = 0;
    double batch_mean = 0.0;
    std::uint32_t batch_p50 = 0, batch_p90 = 0, batch_p99 = 0, batch_max = 0;
    double prompt_tps_10s = 0.0, prompt_tps_60s = 0.0;
    double generated_tps_10s = 0.0, generated_tps_60s = 0.0;
    std::map<std::string, std::uint64_t> rejects; ///< reason -> count
};

class metrics {
public:
    metrics();
    ~metrics();
    metrics(const metrics&) = delete;
    metrics& operator=(const metrics&) = delete;

    void request_done(const std::string& route, unsigned status, double seconds);
    void completion(const msg::completion& c);
    void inter_token(double seconds);
    void step(std::uint32_t n_seqs, double seconds);
    void rejected(const std::string& reason);
    /// Tokens as they happen, for the windowed rates: prompt tokens when their prefill ends
    /// (the first token), generated tokens as they stream.
    void prompt_processed(std::uint32_t n);
    void token_generated();
    [[nodiscard]] live_stats live() const;
    /// Gauges from the batchers' stats (running, waiting per priority, KV usage), and the
    /// prefix cache's counters from their cumulative figures (prefix_counts).
    void queues(const std::vector<msg::batcher_stats>& stats);
    void prefix_counts(const std::vector<msg::batcher_stats>& stats);
    /// bitnet_model_info{alias,version,format,device} = 1 for each served version (alias, version,
    /// format, device); versions no longer served leave the family.
    void model_info(const std::vector<std::array<std::string, 4>>& served);
    /// The cluster's series (bitnet_cluster_nodes{node,state}, bitnet_requests_migrated_total
    /// {node}, bitnet_cluster_link_{messages,bytes}_total{node,peer,direction,kind}) exist from
    /// here on, labelled with this node's name.
    void cluster_node(const std::string& node);
    void cluster_nodes(std::uint32_t up, std::uint32_t suspect, std::uint32_t down);
    void migrated();
    /// One message of `kind` (heartbeat | stream) of `bytes` over the link to `peer`,
    /// `direction` in | out.
    void link(const std::string& peer, const std::string& direction, const std::string& kind,
              std::uint64_t bytes);
    /// bitnet_cluster_heartbeat_gap_seconds{node,peer}: the time between two heartbeats of
    /// `peer` as this node received them.
    void heartbeat_gap(const std::string& peer, double seconds);
    /// bitnet_cluster_suspect_total{node,peer}: `peer` turned suspect.
    void suspect(const std::string& peer);
    /// bitnet_cluster_down_total{node,peer}: `peer` turned down.
    void down(const std::string& peer);
    /// bitnet_cluster_dial_failures_total{node}: a dial of a peer's address did not connect.
    void dial_failed();
    /// bitnet_cluster_refusals_total{node,reason}: a peer this node refused. reason: proof (its
    /// join proof failed: a certificate that names another node), name_taken (a second process
    /// under the name of a member linked and up), tls (a TLS session the cluster's CA refused,
    /// or that broke), basp (a frame past the guard's limits), order (a model order or roll
    /// without the admin role or key), placement (a request placed, or a prompt sent to
    /// tokenize, by a peer without the router role).
    void cluster_refused(const std::string& reason);
    /// bitnet_model_swaps_total{result}: success | failed | rollback.
    void swap(const std::string& result);
    /// bitnet_device_fallbacks_total{alias,from,to,reason}: a model version moved from placement
    /// `from` to `to` because `from` could not serve it (reason: not_built | no_driver |
    /// no_device | out_of_memory | format_unsupported | load_failed | warmup_failed | crashed).
    void device_fallback(const std::string& alias, const std::string& from, const std::string& to,
                         const std::string& reason);
    /// bitnet_executor_stalls_total{alias}: steps that ran past step_timeout_ms (the batcher's
    /// watchdog); each replaced the version's executor as a crash would.
    void executor_stall(const std::string& alias);
    /// bitnet_build_info{version,git_sha} = 1 (the server sets it once; until then it is absent).
    void build_info(const std::string& version, const std::string& git_sha);
    /// HTTPS: bitnet_tls_handshake_failures_total (TLS hellos whose handshake failed: old
    /// protocol versions, untrusted certificates, scanners) and bitnet_tls_reloads_total{result}
    /// (SIGHUP re-reads of the certificate and key: ok | failed).
    void tls_handshake_failed();
    void tls_reload(bool ok);
    /// The process's bounded tables (bitnet_memory_table_bytes, _budget_bytes and _entries,
    /// by table) and its live per-version objects (bitnet_live_objects, by kind), as scraped.
    void memory(const std::vector<bitnet::memory::table_figures>& tables);
    /// bitnet_http_connections_open (set at each scrape) and
    /// bitnet_http_connections_reclaimed_total: idle connections closed to make room past
    /// max_connections or max_connections_per_client.
    void connections_open(std::size_t n);
    void connection_reclaimed();
    /// bitnet_http_accept_failures_total: accepts of the listening socket that failed (out of
    /// descriptors or kernel memory, or a connection reset before it was taken).
    void accept_failed();
    /// Text exposition format 0.0.4.
    [[nodiscard]] std::string render() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace bitnet::http
