// Response rendering: every JSON body and SSE payload the routes send, native and OpenAI shapes,
// as pure functions of native values (the request parsing is beside it, in api_json.hpp). The
// session only decides what to send and when; the bytes are made here. Tests compare streams
// byte for byte, so a change here is a change to the contract (http/openapi.json).
#pragma once

#include "common/memory_tables.hpp"
#include "http/errors.hpp"
#include "http/observe/metrics.hpp"
#include "messages/types.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::http {

struct build_info;

// ---- small pieces ------------------------------------------------------------------------

/// `s` as a JSON string literal (quoted and escaped).
[[nodiscard]] std::string quoted(std::string_view s);

/// Microseconds as milliseconds in plain decimal with 3 digits ("12.345").
[[nodiscard]] std::string ms_of(std::int64_t us);

/// Seconds since the Unix epoch (OpenAI's `created`).
[[nodiscard]] std::int64_t unix_now();

/// Our finish reason in OpenAI's vocabulary: "length" for a cut (length, deadline, a drain
/// cut), else "stop".
[[nodiscard]] std::string openai_finish(msg::finish_reason reason);

/// `s` with every byte sequence that is not valid UTF-8 replaced by U+FFFD (a token's piece may
/// be half a character; JSON text must be whole ones, and the raw bytes go in "bytes").
[[nodiscard]] std::string utf8_or_replacement(std::string_view s);

/// `[a,b,...]` of elements already rendered as JSON text.
[[nodiscard]] std::string json_list(const std::vector<std::string>& xs);

/// `{"prompt_tokens","completion_tokens","total_tokens"}`.
[[nodiscard]] std::string usage_json(const msg::completion& c);

/// `{"queue_ms","prefill_ms","ttft_ms","decode_ms","total_ms","tokens_per_second"}`.
[[nodiscard]] std::string timings_json(const msg::completion& c);

/// The Server-Timing header of a plain reply (queue, prefill, decode, total).
[[nodiscard]] std::string server_timing(const msg::completion& c);

// ---- logprobs (OpenAI shapes) ------------------------------------------------------------

/// The bytes one token stands for (empty when unknown).
using piece_lookup = std::function<std::string(msg::token_id)>;

/// Chat: `{"token","logprob","bytes","top_logprobs":[...]}` for one generated token.
/// The pieces of a token event's token and its alternatives, as the batcher put them in the
/// event (decoded by the version that ran the request).
[[nodiscard]] piece_lookup pieces_of(const msg::token_event& ev);

[[nodiscard]] std::string chat_logprob(const msg::token_event& ev, const piece_lookup& piece);

/// Chat: `{"content":[entries]}`.
[[nodiscard]] std::string chat_logprobs_object(const std::vector<std::string>& entries);

/// Completions: one token's values of the four columns (tokens, token_logprobs, top_logprobs,
/// text_offset); `text_offset` is where the token's text starts in the reply.
[[nodiscard]] std::array<std::string, 4> completion_logprob_columns(const msg::token_event& ev,
                                                                    const piece_lookup& piece,
                                                                    std::size_t text_offset);

/// Completions: `{"tokens","token_logprobs","top_logprobs","text_offset"}` from the columns.
[[nodiscard]] std::string
completion_logprobs_object(const std::array<std::vector<std::string>, 4>& cols);

// ---- inference: streams ------------------------------------------------------------------

/// What every OpenAI chunk of one request repeats (`id` is made from `req_id`, "req-N").
struct chunk_head {
    std::string_view req_id;
    std::int64_t created = 0;
    std::string_view model;
};

/// A `chat.completion.chunk`; `delta`, `finish` and `logprobs` are JSON text; `index` is the
/// choice (n > 1).
[[nodiscard]] std::string chat_chunk(const chunk_head& h, const std::string& delta,
                                     const std::string& finish,
                                     const std::string& logprobs = "null", std::uint32_t index = 0);

/// A streamed `text_completion`; `finish` and `logprobs` are JSON text; `index`: the choice.
[[nodiscard]] std::string completion_chunk(const chunk_head& h, const std::string& text,
                                           const std::string& finish,
                                           const std::string& logprobs = "null",
                                           std::uint32_t index = 0);

/// The last chunk of a stream with `include_usage`: no choices, the usage.
[[nodiscard]] std::string chat_usage_chunk(const chunk_head& h, const msg::completion& c);
[[nodiscard]] std::string completion_usage_chunk(const chunk_head& h, const msg::completion& c);

/// Native stream: the `token` event's data (a token < 0 is held-back text: no id, no logprob;
/// without `with_logprob`, the request's `token_logprob: false`, no logprob on any).
[[nodiscard]] std::string native_token_event(const msg::token_event& ev, bool with_logprob);

/// Native stream: the `done` event's data.
[[nodiscard]] std::string native_done_event(const msg::completion& c);

// ---- inference: plain replies ------------------------------------------------------------

/// POST /v1/inference: `tokens` are the generated tokens' events.
[[nodiscard]] std::string native_body(const std::string& req_id, const msg::completion& c,
                                      const std::string& text,
                                      const std::vector<msg::token_event>& tokens,
                                      bool with_logprobs = false);

/// POST /v1/chat/completions; `logprobs` is JSON text ("null" when not asked for).
[[nodiscard]] std::string chat_body(const std::string& req_id, std::int64_t created,
                                    const msg::completion& c, const std::string& text,
                                    const std::string& logprobs);

/// POST /v1/chat/completions with a tool call: `tool_calls` (JSON text; the turn's whole calls,
/// settle_turn) with content null (or `content`, the text an auto turn wrote before its calls)
/// and finish_reason "tool_calls"; without them (the call was cut), no calls and the finish
/// reason ("length").
[[nodiscard]] std::string chat_tool_call_body(const std::string& req_id, std::int64_t created,
                                              const msg::completion& c,
                                              const std::optional<std::string>& tool_calls,
                                              const std::string* content = nullptr);

/// POST /v1/completions; `logprobs` is JSON text ("null" when not asked for).
[[nodiscard]] std::string completion_body(const std::string& req_id, std::int64_t created,
                                          const msg::completion& c, const std::string& text,
                                          const std::string& logprobs);

// ---- operational routes ------------------------------------------------------------------

/// What the operational routes know of the actors at one moment.
struct status_snapshot {
    bool ready = false;
    std::string ready_reason;
    bool admission_up = false;
    bool supervisor_up = false;
    std::vector<msg::batcher_stats> stats;
    std::vector<msg::model_status> models;
};

/// GET /health and /health/ready.
[[nodiscard]] std::string health_body(const status_snapshot& snap, const build_info& build,
                                      bool has_supervisor, std::int64_t uptime_s);

/// GET /v1/stats for a user key: `{"key":{"requests","prompt_tokens","completion_tokens"}}`.
[[nodiscard]] std::string key_stats_body(std::uint64_t requests, std::uint64_t prompt_tokens,
                                         std::uint64_t completion_tokens);
/// What /v1/stats shows of the process beside the models: its bounded tables and connections.
struct process_figures {
    std::vector<memory::table_figures> tables;
    std::uint64_t connections_open = 0;
    std::uint64_t connections_reclaimed = 0; ///< idle ones closed to make room past a cap
};

/// GET /v1/stats: the queues, rejects, batch sizes and token rates, `memory` (each bounded
/// table's bytes, budget and entries, and the live objects of model versions) and
/// `connections`.
[[nodiscard]] std::string stats_body(const std::vector<msg::batcher_stats>& stats,
                                     const live_stats& live, const process_figures& process);

/// GET /v1/models: the models not unloaded.
[[nodiscard]] std::string models_list_body(const std::vector<msg::model_status>& models);

/// GET /v1/models/{alias}: the entry plus versions, operations and performance.
[[nodiscard]] std::string model_detail_body(const msg::model_status& m,
                                            const std::vector<msg::batcher_stats>& stats);

// ---- model management and text -----------------------------------------------------------

/// 202 of an accepted operation: `{"alias","version","state","operation_id"}`.
[[nodiscard]] std::string ticket_body(const msg::operation_ticket& t);

/// The error body of a refused operation, with its `operation_id` when it has one.
[[nodiscard]] std::string ticket_error_body(const api_error& e, const std::string& req_id,
                                            const std::string& operation_id);

/// 202 of the crash test hook: `{"alias"}`.
[[nodiscard]] std::string alias_body(const std::string& alias);

/// POST /v1/tokenize: `{"tokens","model"}`.
[[nodiscard]] std::string tokenize_body(const std::vector<std::int32_t>& ids,
                                        const std::string& model);

/// POST /v1/detokenize: `{"text","model"}` (text made valid UTF-8).
[[nodiscard]] std::string detokenize_body(const std::string& text, const std::string& model);

} // namespace bitnet::http
