#include "conf/config_fields.hpp"

namespace bitnet::conf::detail {

namespace {

// The keys of test builds (BITNET_TEST_HOOKS: the dev and asan presets), last in the table there.
// clang-format off
#define BITNET_TEST_HOOK_FIELDS                                                                    \
    {"test_tool_call_opener_bias", &server_config::test_tool_call_opener_bias, 0, 100,             \
     "test hook: logit bias on a one-token tool-call opener in auto turns (0 = off)"},             \
    {"test_hooks", &server_config::test_hooks, 0, 1,                                               \
     "1 = serve the crash test hook POST /v1/models/{alias}/crash"},
// clang-format on

// Every key, as data: constant-initialized, so it is whole before any code runs.
constexpr field k_fields[] = {
    {"listen_address", &server_config::listen_address, 0, 0, "address to listen on"},
    {"port", &server_config::port, 0, 65535, "TCP port (0 = ephemeral)"},
    {"io_threads", &server_config::io_threads, 1, 256, "HTTP io_context threads"},
    {"caf_threads", &server_config::caf_threads, 1, 256, "CAF scheduler worker threads"},
    {"models", models_field{}, 0, 0, "alias=path[,alias=path...] or one PATH"},
    {"default_model", &server_config::default_model, 0, 0, "alias used when none is named"},
    {"n_threads", &server_config::n_threads, 0, 1024,
     "compute threads (0 = the CPUs this process may use: affinity, cgroup quota)"},
    {"kv_budget_bytes", &server_config::kv_budget_bytes, 1ull << 16, 1ull << 40,
     "bytes of the KV pool per model"},
    {"kv_block_tokens", &server_config::kv_block_tokens, 1, 4096, "tokens per KV block"},
    {"max_batch_tokens", &server_config::max_batch_tokens, 1, 1u << 20,
     "tokens in one step (decode + prefill chunks)"},
    {"decoding_batch_tokens", &server_config::decoding_batch_tokens, 2, 1u << 20,
     "tokens in a step while streams decode (decodes first, then prefill chunks)"},
    {"max_batch_seqs", &server_config::max_batch_seqs, 1, 4096, "sequences in one step"},
    {"tenant_share_percent", &server_config::tenant_share_percent, 1, 100,
     "while another API key waits, the percent of max_batch_seqs and of a step's prompt "
     "tokens one key may hold (100 = first come, first served across keys)"},
    {"prefix_caching", &server_config::prefix_caching, 0, 1,
     "1 = reuse cached KV blocks of a shared prompt prefix; 0 = compute every prompt"},
    {"speculative", &server_config::speculative, 0, 0,
     "auto|off: speculative decoding (n-gram drafts, verified exactly) for requests that do "
     "not choose"},
    {"spec_max_draft", &server_config::spec_max_draft, 0, 64,
     "most draft tokens a sequence verifies per step (0 = no speculative decoding)"},
    {"spec_step_tokens", &server_config::spec_step_tokens, 1, 1u << 20,
     "drafts are added only while a step holds fewer tokens than this"},
    {"draft_model", &server_config::draft_model, 0, 0,
     "GGUF of a smaller model with the same vocabulary: its greedy tokens are drafts for the "
     "models the server starts with (empty = none)"},
    {"max_n", &server_config::max_n, 1, 127,
     "largest n (choices from one prompt, its KV shared) on completions and chat"},
    {"kv_cache_type", &server_config::kv_cache_type, 0, 0,
     "f16|q8_0: the KV cache's element type (q8_0: 0.53x the bytes per token, measured "
     "loss; CPU engine only)"},
    {"tl_kernel_config", &server_config::tl_kernel_config, 0, 0,
     "bitnet.cpp's kernel_config.ini: the TL1/TL2 layouts of shapes its built-in table does "
     "not list (empty = the table alone)"},
    {"chat_template_file", &server_config::chat_template_file, 0, 0,
     "a Jinja chat template file used instead of each model's own (empty = the model's)"},
    {"chat_template_fallback", &server_config::chat_template_fallback, 0, 1,
     "1 = a chat template that cannot be used falls back to the built-in form with a warning; "
     "0 = the model fails to load, the error naming the construct"},
    {"q8_logits", &server_config::q8_logits, 0, 1,
     "1 = logits from a Q8_0 copy of the embedding (0.53x the bytes, measured loss)"},
    {"greedy_screen", &server_config::greedy_screen, 0, 1,
     "1 = greedy requests that deliver no logprobs take their token, exactly, from a Q8_0 "
     "copy of the F16 logits (about half its bytes more memory)"},
    {"greedy_screen_rows", &server_config::greedy_screen_rows, 0, 4096,
     "the most greedy-only rows a step takes from the greedy screen (0 = measured at load: "
     "where it beats the F16 product)"},
    {"max_waiting_requests", &server_config::max_waiting_requests, 1, 1u << 24,
     "queued requests before 503 queue_full"},
    {"max_waiting_prompt_tokens", &server_config::max_waiting_prompt_tokens, 1, 1ull << 40,
     "queued prompt tokens before 503 queue_full"},
    {"priority_weight_high", &server_config::priority_weight_high, 1, 1000,
     "admission weight of priority high"},
    {"priority_weight_normal", &server_config::priority_weight_normal, 1, 1000,
     "admission weight of priority normal"},
    {"priority_weight_low", &server_config::priority_weight_low, 1, 1000,
     "admission weight of priority low"},
    {"default_timeout_ms", &server_config::default_timeout_ms, 1, k_u32_max,
     "request deadline when the request names none"},
    {"step_timeout_ms", &server_config::step_timeout_ms, 100, k_u32_max,
     "a step slower than this is a stuck executor, replaced as for a crash"},
    {"mask_cache_bytes", &server_config::mask_cache_bytes, 1ull << 20, 1ull << 40,
     "bytes of structured-output token masks kept for all schemas (LRU, fair share)"},
    {"mask_ms_per_token", &server_config::mask_ms_per_token, 1, 60000,
     "structured output: CPU ms of token masks a sequence may take per token it samples, after "
     "one mask's own 2000 up front; past it the request ends with an error naming the limit"},
    {"schema_cache_bytes", &server_config::schema_cache_bytes, 1ull << 20, 1ull << 40,
     "bytes of compiled structured-output schemas kept for all models (LRU; a schema past the "
     "whole budget is a 400)"},
    {"quota_requests_per_minute", &server_config::quota_requests_per_minute, 0, 1u << 24,
     "sequences (n choices count n) per minute per API key before 429 (0 = no quota)"},
    {"quota_burst", &server_config::quota_burst, 0, 1u << 24,
     "sequences a key may save up (0 = quota_requests_per_minute)"},
    {"max_body_bytes", &server_config::max_body_bytes, 64, 1ull << 32,
     "largest request body (413 past it)"},
    {"read_timeout_ms", &server_config::read_timeout_ms, 1, k_u32_max, "HTTP read timeout"},
    {"write_timeout_ms", &server_config::write_timeout_ms, 1, k_u32_max, "HTTP write timeout"},
    {"request_header_timeout_ms", &server_config::request_header_timeout_ms, 100, k_u32_max,
     "a request's headers must arrive whole within this from their first byte"},
    {"request_body_min_rate", &server_config::request_body_min_rate, 0, k_u32_max,
     "body bytes/s a request must keep to after request_header_timeout_ms (0 = none)"},
    {"sse_ping_ms", &server_config::sse_ping_ms, 10, k_u32_max,
     "': ping' interval while a stream waits"},
    {"sse_buffer_bytes", &server_config::sse_buffer_bytes, 1024, 1ull << 32,
     "unsent SSE bytes before a slow reader is cancelled"},
    {"responses_store_max", &server_config::responses_store_max, 0, 1u << 20,
     "Responses replies kept for previous_response_id and item_reference (0 = none)"},
    {"responses_store_ttl_s", &server_config::responses_store_ttl_s, 1, 7u * 24 * 3600,
     "seconds a stored Responses reply is kept"},
    {"responses_store_bytes", &server_config::responses_store_bytes, 1ull << 16, 1ull << 36,
     "bytes of one API key's stored Responses replies before its oldest go"},
    {"responses_store_total_bytes", &server_config::responses_store_total_bytes, 1ull << 16,
     1ull << 40,
     "bytes of all keys' stored Responses replies; past it the key holding the most loses its "
     "oldest"},
    {"api_keys", &server_config::api_keys, 0, 0, "inference API keys (comma-separated)",
     secrecy::secret},
    {"metrics_api_key", &server_config::metrics_api_key, 0, 0,
     "the Bearer credential GET /metrics asks for (empty: /metrics open)", secrecy::secret},
    {"prefix_cache_share_groups", &server_config::prefix_cache_share_groups, 0, 0,
     "groups of API keys whose requests share cached prompt prefixes, each keyA|keyB",
     secrecy::secret},
    {"cors_allowed_origins", &server_config::cors_allowed_origins, 0, 0,
     "origins browser pages may call the API from, scheme://host[:port] or * (comma-separated; "
     "empty = no CORS)"},
    {"admin_api_keys", &server_config::admin_api_keys, 0, 0, "admin API keys (comma-separated)",
     secrecy::secret},
    {"admin_open", &server_config::admin_open, 0, 1,
     "1 = admin routes open when no admin key is set (local use)"},
    {"web_ui", &server_config::web_ui, 0, 1,
     "1 = GET / serves the web page (chat playground, operator console) to browsers"},
    {"max_connections", &server_config::max_connections, 1, 1u << 20,
     "open connections; past it the oldest idle one closes, or the new one gets 503"},
    {"max_connections_per_client", &server_config::max_connections_per_client, 1, 1u << 20,
     "open connections of one client address (trusted proxies exempt); past it its oldest idle "
     "one closes, or the new one gets 503"},
    {"chat_content_special", &server_config::chat_content_special, 0, 1,
     "1 = control tokens typed in chat messages are parsed (trusted clients only; 0 = messages "
     "are text)"},
    {"trusted_proxies", &server_config::trusted_proxies, 0, 0,
     "proxies whose X-Forwarded-For names the client: addresses or ADDRESS/PREFIX networks "
     "(comma-separated; empty = none)"},
    {"max_header_bytes", &server_config::max_header_bytes, 1024, 1u << 20,
     "request line + headers, and trailers (431 past it)"},
    {"drain_timeout_ms", &server_config::drain_timeout_ms, 0, k_u32_max,
     "time running requests get after SIGTERM"},
    {"memory_budget_bytes", &server_config::memory_budget_bytes, 0, 1ull << 50,
     "weights + KV of all loaded model versions (0 = no limit)"},
    {"probation_s", &server_config::probation_s, 0, 86400,
     "a new version crashing this soon after its swap is rolled back"},
    {"keep_standby", &server_config::keep_standby, 0, 1,
     "1 = a replaced version stays resident until the next swap; 0 = through probation only"},
    {"log_level", &server_config::log_level, 0, 0, "trace|debug|info|warn|error|critical|off"},
    {"compute_spin_count", &server_config::compute_spin_count, 0, 100000000,
     "iterations an idle compute thread spins before it sleeps (0 = sleep at once)"},
    {"log_format", &server_config::log_format, 0, 0,
     "text | json (one JSON object per line, with request and trace ids)"},
    {"otlp_endpoint", &server_config::otlp_endpoint, 0, 0,
     "OTLP/HTTP receiver for traces, e.g. http://collector:4318 (empty = tracing off)"},
    {"otlp_sample_ratio", &server_config::otlp_sample_ratio, 0, 0,
     "share of new traces sampled, 0..1 (a caller's traceparent decides for its trace)"},
    {"otlp_headers", &server_config::otlp_headers, 0, 0,
     "name=value headers sent with every export (comma-separated)", secrecy::secret},
    {"otlp_include_text", &server_config::otlp_include_text, 0, 1,
     "1 = spans may carry prompt and output text"},
    {"otlp_timeout_ms", &server_config::otlp_timeout_ms, 100, 600000,
     "one export attempt, connect to answer"},
    {"otlp_queue_spans", &server_config::otlp_queue_spans, 64, 1u << 24,
     "finished spans waiting for export; more are dropped and counted"},
    {"node_name", &server_config::node_name, 0, 0,
     "this node's name among its peers (empty = the host name)"},
    {"cluster_listen", &server_config::cluster_listen, 0, 0,
     "HOST:PORT of the peer listener (empty = no cluster; [::1]:PORT for IPv6)"},
    {"cluster_join", &server_config::cluster_join, 0, 0,
     "peers to join, HOST:PORT[,HOST:PORT...] (short form --join)"},
    {"cluster_cert", &server_config::cluster_cert, 0, 0,
     "PEM certificate of this node for peer TLS"},
    {"cluster_key", &server_config::cluster_key, 0, 0, "PEM private key of cluster_cert"},
    {"cluster_ca", &server_config::cluster_ca, 0, 0, "PEM CA that signs every peer's certificate"},
    {"cluster_insecure", &server_config::cluster_insecure, 0, 1,
     "1 = plain TCP between peers, loopback only (the flag alone means 1)"},
    {"cluster_insecure_acknowledged", &server_config::cluster_insecure_acknowledged, 0, 1,
     "1 = run cluster_insecure knowing any local process can join as a peer (the flag alone "
     "means 1)"},
    {"cluster_roles", &server_config::cluster_roles, 0, 0,
     "insecure mode: the roles this node declares, replica,router,admin or a part (empty = "
     "all)"},
    {"cluster_shared_certificate", &server_config::cluster_shared_certificate, 0, 1,
     "1 = all nodes share one certificate: names are not bound to it (the flag alone means 1)"},
    {"cluster_failure_timeout_ms", &server_config::cluster_failure_timeout_ms, 300, 600000,
     "a peer silent this long is declared failed"},
    {"cluster_heartbeat_ms", &server_config::cluster_heartbeat_ms, 50, 10000,
     "heartbeat interval between peers (< cluster_failure_timeout_ms / 2)"},
    {"cluster_forget_after_ms", &server_config::cluster_forget_after_ms, 0, k_u32_max,
     "a peer down this long is forgotten: no longer listed or dialed (0 = never)"},
    {"cluster_max_dial_backoff_ms", &server_config::cluster_max_dial_backoff_ms, 1000, 3600000,
     "the cap of the redial backoff (1 s doubling, +-20 % jitter)"},
    {"tls_cert", &server_config::tls_cert, 0, 0,
     "PEM certificate chain: serve HTTPS on the port (with tls_key; re-read on SIGHUP)"},
    {"tls_key", &server_config::tls_key, 0, 0, "PEM private key of tls_cert"},
    {"devices", &server_config::devices, 0, 0,
     "placements in preference order: auto, cpu, cuda, cuda:N, sim:N (comma-separated; the "
     "CPU is always the last resort)"},
#ifdef BITNET_TEST_HOOKS
    BITNET_TEST_HOOK_FIELDS
#endif
};

#ifndef BITNET_TEST_HOOKS
// Without the test hooks their keys are in no listing (--help, --print-config) and no flag or
// environment variable reads them, but a file that names them still loads (operators' files, and
// those written for a test build): the value is read and nothing uses it.
constexpr field k_absent_test_fields[] = {BITNET_TEST_HOOK_FIELDS};
#endif
#undef BITNET_TEST_HOOK_FIELDS

} // namespace

std::span<const field> fields() {
    return k_fields;
}

const field* find_field(std::string_view key) {
    for (const auto& f : fields())
        if (f.key == key)
            return &f;
    return nullptr;
}

const field* find_file_key(std::string_view key) {
    if (const auto* f = find_field(key))
        return f;
#ifndef BITNET_TEST_HOOKS
    for (const auto& f : k_absent_test_fields)
        if (f.key == key)
            return &f;
#endif
    return nullptr;
}

} // namespace bitnet::conf::detail
