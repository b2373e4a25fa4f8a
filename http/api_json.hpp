// JSON <-> native structs for the inference routes. All request validation lives here, before
// anything is queued: wrong types, out-of-range values and unknown enum values are a 400 that
// names the field. Which fields a route takes at all, and which it refuses or ignores, is
// field_policy.hpp's table (README.md, "Request fields"), checked first.
#pragma once

#include "http/errors.hpp"
#include "http/field_policy.hpp"
#include "messages/types.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bitnet::http {

/// One chat message (role: system, user or assistant). The serving version renders a chat with
/// its own template (its text actor), so the messages travel as they came.
using chat_message = msg::chat_message;

/// A validated request, before tokenization.
struct inference_input {
    std::string model;
    std::string prompt_text;               ///< when the prompt is text (or rendered chat)
    std::vector<msg::token_id> prompt_ids; ///< when the prompt is token ids
    bool prompt_is_ids = false;
    std::vector<chat_message> messages; ///< chat only, rendered by the model's template
    /// chat only: the request's `tools` (OpenAI's array, as JSON text) for a template that
    /// renders them; empty without tools or with tool_choice "none".
    std::string template_tools;
    /// chat only: `chat_template_kwargs` (a JSON object's text): extra template variables.
    std::string template_kwargs;
    bool add_bos = true;
    std::uint32_t max_tokens = 128;
    msg::sampling params = msg::api_sampling_defaults();
    std::vector<std::string> stop;
    std::vector<msg::token_id> stop_token_ids;
    msg::priority prio = msg::priority::normal;
    std::uint32_t timeout_ms = 0;
    bool stream = false;
    /// Native routes: the body's `stream`, when it has one (it must agree with the route).
    std::optional<bool> native_stream;
    bool include_usage = false;
    /// Report the chosen tokens' log-probabilities (`params.n_logprobs` alternatives each).
    bool want_logprobs = false;
    /// Native routes: whether a stream's token events carry the token's logprob (`token_logprob`,
    /// default true). Without it a greedy stream can take its tokens from the greedy screen.
    bool token_logprob = true;
    /// Completions `echo`: the prompt comes back before the completion (with its own logprobs
    /// when logprobs are asked); allows max_tokens 0 (score the prompt, generate nothing).
    bool echo = false;
    /// Structured output (api_structured.hpp): the JSON Schema to decode under, the field it
    /// came from, and whether the reply is a tool call.
    std::string json_schema;
    std::string schema_param;
    bool tool_call = false;
    /// A call forced to this one function: the schema is its arguments' (api_structured.hpp).
    std::string tool_name;
    /// Whether one turn may hold several calls (`parallel_tool_calls`, default true).
    bool parallel_tool_calls = true;
    /// tool_choice "auto" (or none given) with tools: the functions the model may call if it
    /// opens a call itself (msg::generate_request::tool_union); empty otherwise.
    std::string tool_union;
    /// OpenAI `n`: choices from the one prompt (the server's max_n caps it; native routes: 1).
    std::uint32_t n = 1;
    /// vLLM's `cache_salt`: only requests with the same salt (and key) share cached prefixes.
    std::string cache_salt;
    /// Speculative decoding: the request's choice, or the server's default.
    msg::spec_mode speculative = msg::spec_mode::server_default;
};

using parse_result = std::variant<inference_input, api_error>;

/// How deep a client's JSON Schema may nest objects and arrays: the schema compiler's own limit
/// (max_schema_nesting in model/constrain/limits.hpp), checked here too so that the 400 names it
/// before anything is queued.
inline constexpr std::size_t max_schema_nesting = 64;
/// How deep a request body may nest: a schema at its limit inside the envelope that carries it
/// (body, tools, [i], function, parameters; or response_format, json_schema, schema).
inline constexpr std::size_t max_request_nesting = max_schema_nesting + 8;

/// A request body, or a JSON text a field carries (`param`; empty: the body), parsed with
/// max_request_nesting. Bad JSON is a 400 naming `param`; a body nested too deep names the limit.
[[nodiscard]] std::variant<boost::json::value, api_error>
parse_request_json(std::string_view text, const std::string& param = {});

/// Parses and validates a request body for `kind`.
[[nodiscard]] parse_result parse_inference(std::string_view body, api_family kind);

/// A double in plain decimal (Boost.JSON would print 2.5E-1): `digits` after the point.
[[nodiscard]] std::string fixed(double v, int digits = 3);

} // namespace bitnet::http
