// The HTTP front end: a Boost.Beast listener on its own io_context threads serving the routes of
// http/openapi.json. Beast and CAF stay out of this header (pimpl) so callers compile cheaply.
// The asio<->CAF seam (bridge.cpp's pattern, in inference_sink.cpp): an asio thread never waits on
// an actor: it spawns one sink actor per request, which submits to admission and receives the
// token/done/fail events; the sink posts each event onto the connection's strand. Only the
// strand writes to the socket. A dropped connection kills the sink, and the batcher (which
// monitors sinks) cancels the sequence and frees its KV within a step.
// The text side (tokenize, detokenize, chat templates, logprob pieces) belongs to the model
// versions: text prompts and chat messages travel to admission as they came and are tokenized by
// the version that runs them; /v1/tokenize and /v1/detokenize ask admission by message too.
#pragma once

#include "common/error.hpp"
#include "http/observe/build_info.hpp"
#include "http/reply_store_limits.hpp"
#include "http/transport/transport_options.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::http {

class metrics;

/// One CUDA device as the runtime reported it at start-up.
/// Everything the HTTP front end is configured with: the transport's options (limits, timeouts,
/// CORS, TLS) and what the routes need.
struct server_options : transport_options {
    /// The largest OpenAI `n` (choices per request); above it a request is a 400 naming `n`.
    std::uint32_t max_n = 8;
    /// Stored Responses replies (previous_response_id, item_reference) and message threads
    /// (http/reply_store_limits.hpp).
    response_store_limits responses_store;
    std::vector<std::string> api_keys; ///< empty = open
    /// Groups of API keys that share one prefix-cache scope (http/cache_scope.hpp).
    std::vector<std::vector<std::string>> cache_share_groups;
    /// The credential /metrics asks for (`Authorization: Bearer`), beside the admin keys; empty:
    /// /metrics is open (its counters are global: cache hits, queue depths, request rates).
    std::string metrics_key;
    /// Model management (load, rollback, unload). Empty: those routes answer 403, unless
    /// `admin_open` (local use) lets them through without a key.
    std::vector<std::string> admin_keys;
    bool admin_open = false;
    /// GET / serves the web page (http/ui/) to browsers; off: a 404 there and under /ui/.
    bool web_ui = true;
    std::string default_model;
    /// Model states and executor info for /v1/models, /health and bitnet_model_info. Null: the
    /// models are listed from admission's queue stats only.
    msg::supervisor_actor supervisor;
    /// The registry /metrics renders; shared so the batchers' step callback can feed it. Null:
    /// the server makes its own.
    std::shared_ptr<metrics> shared_metrics;
    build_info build;
    /// The node's cluster actor (actors/cluster/cluster_node.hpp): GET /v1/cluster asks it, and in
    /// a cluster (`clustered`) model management rolls across the nodes through it. Null: a single
    /// node without one (GET /v1/cluster answers with this node alone).
    msg::cluster_actor cluster;
    bool clustered = false;
    /// Serve the test hook POST /v1/models/{alias}/crash (admin): kills the alias's serving
    /// executor as a crash would. Only builds with test hooks turn it on (conf: test_hooks).
    bool test_hooks = false;
};

class server {
public:
    server(caf::actor_system& sys, msg::admission_actor admission, server_options opt);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Binds and starts the io threads; returns the bound port.
    [[nodiscard]] result<std::uint16_t> start();
    /// Drain: running requests continue; the listener keeps answering (readiness 503, new work
    /// 503 + Retry-After from admission) and every response closes its connection.
    void begin_drain();
    /// The end of a drain whose deadline passed: every request still in progress is cancelled
    /// and answered (a stream ends with an error event and finish_reason "cancelled", a plain
    /// request gets 503 `draining`); idle connections close. Returns the requests it cut.
    std::size_t cut_all();
    /// Inference requests accepted and not yet answered in full.
    [[nodiscard]] std::size_t active_requests() const;
    /// Connections not yet closed.
    [[nodiscard]] std::size_t open_connections() const;
    /// HTTPS: re-reads tls_cert and tls_key into a new context for new connections; open
    /// connections keep theirs. On an error the old context stays in use and the error says
    /// why. Without TLS it does nothing. Counted in bitnet_tls_reloads_total{result}.
    result<void> reload_tls();
    /// Stops everything and joins the io threads.
    void stop();

    struct impl; ///< opaque (http/routes/server_impl.hpp, internal: Beast and CAF stay out of here)

private:
    std::unique_ptr<impl> impl_;
};

} // namespace bitnet::http
