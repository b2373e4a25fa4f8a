// The contract's Prometheus metrics (HTTP-API.md "Metrics"), registered once, updated from the
// HTTP layer (request outcomes, latencies) and from polled queue stats (gauges). prometheus-cpp
// families are thread-safe, so no actor owns them; /metrics serializes the registry.
#pragma once

#include "messages/types.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bitnet::http {

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
    /// Gauges from the batchers' stats (running, waiting per priority, KV usage).
    void queues(const std::vector<msg::batcher_stats>& stats);
    /// bitnet_model_info{alias,version,format,device} = 1 for each served version (alias, version,
    /// format, device); versions no longer served leave the family.
    void model_info(const std::vector<std::array<std::string, 4>>& served);
    /// bitnet_model_swaps_total{result}: success | failed | rollback.
    void swap(const std::string& result);
    /// bitnet_build_info{version,git_sha} = 1 (the server sets it once; until then it is absent).
    void build_info(const std::string& version, const std::string& git_sha);
    /// Text exposition format 0.0.4.
    [[nodiscard]] std::string render() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace bitnet::http
