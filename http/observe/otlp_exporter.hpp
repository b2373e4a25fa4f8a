// The OTLP/HTTP trace exporter: one thread of its own that drains the process's span queue
// (common/trace.hpp) in batches, encodes them as protobuf (common/otlp_proto.hpp) and POSTs them
// to <endpoint>/v1/traces with Beast, under a timeout, retrying with backoff. No request ever
// waits for it: a collector that is slow, down or refusing only makes the queue fill, and spans
// that do not fit are dropped and counted (bitnet_trace_spans_dropped_total).
#pragma once

#include "common/error.hpp"
#include "common/trace.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bitnet::http {

/// Where and how to export, from the server's configuration.
struct otlp_options {
    std::string endpoint; ///< http(s)://host[:port][/base]; /v1/traces is appended unless present
    std::vector<std::pair<std::string, std::string>> headers; ///< e.g. authorization
    std::chrono::milliseconds timeout{5000}; ///< one export attempt, connect to answer
    std::uint32_t max_attempts = 4;          ///< then the batch is dropped and counted
    std::size_t batch_spans = 512;
    std::chrono::milliseconds flush_every{1000};
    trace::attributes resource; ///< service.name, service.instance.id, service.version
    std::string scope_version;  ///< the instrumentation scope's version (the server's)
};

/// An endpoint URL taken apart; an error names what is wrong with it.
struct otlp_target {
    bool tls = false;
    std::string host;
    std::string port;
    std::string path; ///< ends with /v1/traces
};
[[nodiscard]] result<otlp_target> parse_otlp_endpoint(const std::string& url);

/// "name=value" items (otlp_headers) as pairs; an error names the first malformed item.
[[nodiscard]] result<std::vector<std::pair<std::string, std::string>>>
parse_otlp_headers(const std::vector<std::string>& items);

class otlp_exporter {
public:
    /// Starts the thread; the endpoint must have passed parse_otlp_endpoint.
    explicit otlp_exporter(otlp_options opt);
    /// Sends what is queued (one attempt, bounded by the timeout), then stops the thread.
    ~otlp_exporter();
    otlp_exporter(const otlp_exporter&) = delete;
    otlp_exporter& operator=(const otlp_exporter&) = delete;

private:
    void run();
    /// One POST of `body`: the HTTP status, or 0 when no answer came (refused, timed out).
    unsigned post(const std::string& body);

    otlp_options opt_;
    otlp_target target_;
    std::thread thread_;
};

} // namespace bitnet::http
