// The server's configuration: one plain struct with documented defaults, and the loader that
// layers the JSON file, then `BITNET_*` environment variables, then command-line flags (later
// wins). Every value is validated and an error names the key and where its value came from.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::conf {

/// One servable model: the alias clients name in `"model"` and the GGUF file behind it.
struct model_entry {
    std::string alias;
    std::string path;
    /// Its own draft model (server_config::draft_model): unset = the server's, "" = none.
    std::optional<std::string> draft_model;
    /// The draft model this entry starts with, given the server-wide one.
    [[nodiscard]] const std::string& draft_or(const std::string& server_wide) const noexcept {
        return draft_model ? *draft_model : server_wide;
    }
    friend bool operator==(const model_entry&, const model_entry&) = default;
};

/// Every tunable of bitnet-server. Defaults here are the documented defaults (conf/README.md and
/// conf/bitnet-server.json repeat them; a test checks that the file and the struct agree).
struct server_config {
    // Listener.
    std::string listen_address = "127.0.0.1";
    std::uint32_t port = 8080; ///< 0 = ephemeral (tests)
    std::uint32_t io_threads = 2;
    std::uint32_t caf_threads = 2;

    // Models.
    std::vector<model_entry> models;
    std::string default_model; ///< empty = the first entry of `models`

    // Engine and batching.
    std::uint32_t n_threads = 0; ///< compute threads per executor; 0 = all cores
    std::uint64_t kv_budget_bytes = 256ull << 20;
    std::uint32_t kv_block_tokens = 16;
    std::uint32_t max_batch_tokens = 512;
    std::uint32_t q8_logits = 0; ///< 1 = Q8_0 block logits (engine_options::q8_logits)
    /// 1 = keep the exact greedy screen of the F16 logits (engine_options::greedy_screen).
    std::uint32_t greedy_screen = 0;
    /// Its most greedy-only rows a step; 0 = measured at load (engine_options::greedy_screen_rows).
    std::uint32_t greedy_screen_rows = 0;
    /// f16 or q8_0: the KV cache's element type (engine_options::kv_q8_0).
    std::string kv_cache_type = "f16";
    /// bitnet.cpp's kernel_config.ini, giving the TL1/TL2 layouts of shapes the built-in table
    /// does not list (engine_options::tl_kernel_config); empty = the table alone.
    std::string tl_kernel_config;
    /// A Jinja chat template used instead of each model's own (`tokenizer.chat_template`);
    /// empty = the model's (model::chat_template_options::template_file).
    std::string chat_template_file;
    /// 1 = a chat template that cannot be used falls back to a built-in form with a warning;
    /// 0 = it fails the model's load, naming the construct.
    std::uint32_t chat_template_fallback = 0;
    /// Tokens in a step that carries decodes (decodes + prefill chunks); msg::batch_policy.
    std::uint32_t decoding_batch_tokens = 128;
    std::uint32_t max_batch_seqs = 32;
    /// Fair shares between API keys (msg::batch_policy::tenant_share_percent); 100 = none.
    std::uint32_t tenant_share_percent = 50;
    /// 1 = automatic prefix caching (msg::batch_policy::prefix_caching); 0 = every prompt is
    /// computed in full.
    std::uint32_t prefix_caching = 1;
    /// Speculative decoding for requests that do not say (their `speculative` field): auto
    /// (n-gram drafts verified exactly, msg::batch_policy::spec_max_draft) or off.
    std::string speculative = "auto";
    /// The most draft tokens one sequence verifies per step; 0 = no speculation at all.
    std::uint32_t spec_max_draft = 8;
    /// Drafts are added only while a step holds fewer tokens than this.
    std::uint32_t spec_step_tokens = 16;
    /// A smaller GGUF with the same vocabulary whose greedy tokens are drafts for the models the
    /// server starts with (msg::executor_order::draft_model); empty = none. An entry of `models`
    /// may name its own (model_entry::draft_model).
    std::string draft_model;
    /// The largest OpenAI `n` (choices sharing one prompt's KV); above it a request is a 400.
    std::uint32_t max_n = 8;

    // Admission.
    std::uint32_t max_waiting_requests = 256;
    std::uint64_t max_waiting_prompt_tokens = 262144;
    std::uint32_t priority_weight_high = 4; ///< admissions per round, weighted fair across levels
    std::uint32_t priority_weight_normal = 2;
    std::uint32_t priority_weight_low = 1;
    std::uint32_t default_timeout_ms = 120000;
    /// A step slower than this is a stuck executor: the watchdog replaces it (readiness 503 for
    /// its alias meanwhile) and the step's requests fail.
    std::uint32_t step_timeout_ms = 60000;
    /// Bytes of structured output's token masks kept for all schemas together (LRU, fair share).
    std::uint64_t mask_cache_bytes = 256ull << 20;
    /// CPU time of structured output's token masks one sequence may take per token it samples,
    /// after one mask's own bound (max_mask_ms) up front (msg::executor_order::mask_ms_per_token).
    std::uint32_t mask_ms_per_token = 100;
    /// Compiled schemas (their text and grammar) kept for all models together.
    std::uint64_t schema_cache_bytes = 128ull << 20;
    /// Test hook: added to the logit of an auto tool call's opener when the opener is one token
    /// (a random-weight test model then opens calls). 0 = off; never for production.
    std::uint32_t test_tool_call_opener_bias = 0;
    std::uint32_t quota_requests_per_minute = 0; ///< per API key; 0 = no quota
    std::uint32_t quota_burst = 0;               ///< requests a key may save up; 0 = one minute's

    // HTTP.
    std::uint64_t max_body_bytes = 1ull << 20;
    std::uint32_t read_timeout_ms = 30000;
    std::uint32_t write_timeout_ms = 30000;
    std::uint32_t request_header_timeout_ms = 10000; ///< the headers whole, from their first byte
    std::uint32_t request_body_min_rate = 1024; ///< body bytes/s after that head start; 0 = none
    std::uint32_t sse_ping_ms = 10000;
    std::uint64_t sse_buffer_bytes = 1ull << 20; ///< unsent SSE bytes before a slow reader is cut
    /// Stored Responses replies (previous_response_id, item_reference): count, age, bytes.
    std::uint32_t responses_store_max = 1000;
    std::uint32_t responses_store_ttl_s = 3600;
    std::uint64_t responses_store_bytes = 64ull << 20;        ///< per key
    std::uint64_t responses_store_total_bytes = 256ull << 20; ///< all keys together
    std::vector<std::string> api_keys;                        ///< empty = inference routes open
    /// Groups of API keys sharing one prefix-cache scope, each "keyA|keyB|..." (http/cache_scope).
    std::vector<std::string> prefix_cache_share_groups;
    /// The credential GET /metrics asks for (Bearer); empty = /metrics open.
    std::string metrics_api_key;
    std::vector<std::string> admin_api_keys; ///< empty = admin routes answer 403
    /// Origins a browser page may call the API from (CORS): "https://app.example" each, or "*"
    /// for any. Empty: no CORS headers, and OPTIONS is 405 as for any unknown method.
    std::vector<std::string> cors_allowed_origins;
    /// 1 = admin routes need no key when admin_api_keys is empty (local use only).
    std::uint32_t admin_open = 0;
    /// 1 = GET / serves the web page (chat playground, operator console) to browsers.
    std::uint32_t web_ui = 1;
    /// Open connections; past it a new connection gets 503 + Retry-After and is closed.
    std::uint32_t max_connections = 1024;
    std::uint32_t max_connections_per_client = 256;
    /// 1 = control tokens typed in chat messages are parsed (trusted deployments only); 0 =
    /// message contents are text, only the chat template's own markers are control tokens.
    std::uint32_t chat_content_special = 0;
    /// Proxies whose X-Forwarded-For names the client (addresses or ADDRESS/PREFIX networks).
    std::vector<std::string> trusted_proxies;
    /// Request line + headers (and a chunked body's trailers); 431 past it.
    std::uint32_t max_header_bytes = 16384;

    // Lifecycle and logging.
    std::uint32_t drain_timeout_ms = 30000;
    /// Weights + KV pools of all resident model versions; a load past it is refused. 0 = none.
    std::uint64_t memory_budget_bytes = 0;
    /// A new version that crashes this soon after its flip is replaced by the previous one.
    std::uint32_t probation_s = 30;
    /// 1 = a replaced version stays resident until the next swap (a manual rollback is a flip);
    /// 0 = only through its successor's probation, then a rollback loads its file again.
    std::uint32_t keep_standby = 0;
    /// 1 = serve the test hook POST /v1/models/{alias}/crash; honoured only by builds with
    /// test hooks (the dev and asan presets), ignored with a warning elsewhere.
    std::uint32_t test_hooks = 0;
    std::string log_level = "info"; ///< trace|debug|info|warn|error|critical|off
    /// What an idle compute thread does between parallel regions: spin this many iterations
    /// (libgomp's GOMP_SPINCOUNT; the gaps inside a step are shorter), then sleep. 0 = sleep at
    /// once. Set by the server whatever OMP_WAIT_POLICY the environment has.
    std::uint32_t compute_spin_count = 300000;
    /// text (spdlog's lines) | json (one object per line: time, level, message, request_id,
    /// trace_id, span_id, model, node).
    std::string log_format = "text";

    // Tracing (OpenTelemetry over OTLP/HTTP protobuf). Off while otlp_endpoint is empty.
    /// Base URL of an OTLP/HTTP receiver (http://collector:4318); spans go to URL/v1/traces.
    std::string otlp_endpoint;
    /// Traces that start here are sampled at this ratio; a caller's traceparent decides for its
    /// own trace (parent-based sampling).
    double otlp_sample_ratio = 1.0;
    /// "name=value" headers on every export (collector authentication).
    std::vector<std::string> otlp_headers;
    /// 1 = spans may carry prompt and output text (off: lengths and counts only).
    std::uint32_t otlp_include_text = 0;
    std::uint32_t otlp_timeout_ms = 5000;  ///< one export attempt
    std::uint32_t otlp_queue_spans = 4096; ///< spans waiting for export; more are dropped

    // Cluster (peer links over CAF remoting). All off while cluster_listen is empty.
    /// This node's name among its peers; empty = the host name, resolved at start-up (checked
    /// with is_valid_node_name, conf/host_port.hpp).
    std::string node_name;
    /// "HOST:PORT" the peer listener binds (parse_host_port); empty = no cluster. Port 0 =
    /// ephemeral (tests).
    std::string cluster_listen;
    /// Peers to join at start-up, "HOST:PORT" each (flag --join A,B; env comma-separated).
    std::vector<std::string> cluster_join;
    /// PEM files of mutual TLS between peers: this node's certificate and key, and the CA that
    /// signs every peer's certificate. All three or none.
    std::string cluster_cert;
    std::string cluster_key;
    std::string cluster_ca;
    /// 1 = plain TCP between peers; refused unless cluster_listen and every join address are
    /// loopback (local tests only).
    std::uint32_t cluster_insecure = 0;
    /// 1 = the operator acknowledges what an insecure cluster allows (any local process can join
    /// as a peer: README "Scaling out"); cluster_insecure is refused without it.
    std::uint32_t cluster_insecure_acknowledged = 0;
    /// Insecure mode only: the roles this node declares to its peers, "replica,router,admin" or
    /// a part of it (empty = all three). Over TLS the roles come from the certificate's role URIs.
    std::string cluster_roles;
    /// 1 = every node holds the same certificate (one shared Secret): peers' names are not bound
    /// to certificates. 0 (default): a peer's certificate must name it (CN or DNS SAN).
    std::uint32_t cluster_shared_certificate = 0;
    /// A peer silent this long is declared failed.
    std::uint32_t cluster_failure_timeout_ms = 3000;
    /// Interval of the heartbeats peers send each other; below half the failure timeout.
    std::uint32_t cluster_heartbeat_ms = 250;
    /// A peer down this long is forgotten (no longer listed or dialed); 0 = never.
    std::uint32_t cluster_forget_after_ms = 300000;
    /// The cap of the redial backoff (1 s doubling, ±20 % jitter).
    std::uint32_t cluster_max_dial_backoff_ms = 30000;

    // HTTPS on the HTTP listener. Both empty: plain HTTP.
    /// PEM certificate chain (leaf first) and its private key; re-read on SIGHUP.
    std::string tls_cert;
    std::string tls_key;

    // Devices (README, "Devices and placements").
    /// Placements in preference order: "auto" (every CUDA device the runtime reports, in index
    /// order), "cpu", "cuda" (= cuda:0), "cuda:N", "sim:N" (the CUDA engine on the simulated
    /// grid: tests). The CPU is always the last resort, listed or not: a version whose placement
    /// cannot serve it moves to the next one, finally the CPU (flag/env: comma-separated).
    std::vector<std::string> devices{"auto"};

    /// The entry `default_model` names (or the first), or nullptr when no model is configured.
    [[nodiscard]] const model_entry* default_entry() const noexcept;
};

/// Looks up an environment variable; injectable so tests do not touch the process environment.
using env_lookup = std::function<std::optional<std::string>(std::string_view name)>;

/// The real process environment.
[[nodiscard]] env_lookup process_env();

/// Where each layer comes from. `args` are the flags after the program name (argv[1..]).
struct config_sources {
    std::optional<std::string> file{}; ///< JSON file; `--config FILE` in `args` overrides it
    env_lookup env{};                  ///< null = no environment layer
    std::vector<std::string> args{};
};

/// Applies the JSON text on top of `cfg` (the file layer). Unknown keys are errors (a typo in a
/// config file must not silently fall back to a default).
[[nodiscard]] result<void> apply_json(server_config& cfg, std::string_view json_text,
                                      std::string_view origin);

/// Defaults, then the file, then the environment, then flags; then cross-field validation.
/// Flags also take the command-line contract's short forms (--host, --threads, --max-seqs,
/// --max-waiting, --api-key, --admin-key, --alias NAME for the one model, --join for
/// --cluster-join) and ignore --print-config (the executable's action). --cluster-insecure may
/// stand alone (= 1).
[[nodiscard]] result<server_config> load_config(const config_sources& src);

/// Checks ranges that involve several keys (the per-key ranges are checked as values are set).
[[nodiscard]] result<void> validate(const server_config& cfg);

/// The keys of one prefix_cache_share_groups entry ("keyA|keyB"), empty parts dropped.
[[nodiscard]] std::vector<std::string> share_group_keys(std::string_view group);

/// The effective configuration as one JSON object in the file's keys (API keys redacted), for
/// `--print-config`.
[[nodiscard]] std::string to_json(const server_config& cfg);

/// The `--help` text: every flag with its environment name and default.
[[nodiscard]] std::string usage();

} // namespace bitnet::conf
