// Anthropic's Messages API (POST /v1/messages) on the chat machinery: a request is translated
// into the equivalent chat completion request and validated by the same parser (so every limit
// and check holds alike), and replies, stream events and errors are rendered in Anthropic's
// shapes.
//   request:  model, max_tokens (required), system (a string or text blocks), messages whose
//             content is a string or blocks (text; tool_use on assistant turns; tool_result on
//             user turns, read as tool messages), stop_sequences, temperature, top_p, top_k (-1
//             for either: not set), stream, tools ({name, description, input_schema}; [] means
//             none) and tool_choice (auto, any, tool, none: auto and none are plain generation,
//             any and tool force a call), output_config.format / output_format (a JSON Schema:
//             response_format); the other fields as http/field_policy.hpp says (thinking only
//             disabled: the model does not think).
//   reply:    {id: "msg_…", type: "message", role, model, content: [text | tool_use],
//              stop_reason: end_turn | max_tokens | stop_sequence | tool_use, usage}.
//   stream:   message_start, content_block_start, ping, content_block_delta (text_delta or
//             input_json_delta), content_block_stop, message_delta (stop_reason, usage),
//             message_stop; an error as `event: error`.
#pragma once

#include "http/api_json.hpp"
#include "http/api_structured.hpp"
#include "http/errors.hpp"
#include "messages/types.hpp"

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bitnet::http {

/// The chat completion request (JSON text) that asks what the Messages request `body` asks, or
/// the 400 that says why there is none. Fields the translation does not know are left out.
/// `format_param`, when given, is set to the field the structured output came in
/// (output_config.format, or the beta's output_format).
[[nodiscard]] std::variant<std::string, api_error>
messages_as_chat(std::string_view body, std::string* format_param = nullptr);

/// Parses a Messages request into the validated input the chat route would get (errors in the
/// Messages request's field names: `stop` is `stop_sequences`).
[[nodiscard]] parse_result parse_messages(std::string_view body);

/// Anthropic's stop_reason for a finish: a forced call that is whole is "tool_use"; `stops`
/// tells whether the request had stop_sequences (then a stop is "stop_sequence").
[[nodiscard]] std::string anthropic_stop_reason(msg::finish_reason finish, bool whole_call,
                                                bool stops);

/// The usage object: uncached input, output and cache reads.
[[nodiscard]] std::string anthropic_usage(const msg::completion& c);

/// A text block; the tool_use blocks ({"type":"tool_use","id","name","input"}) of a turn's
/// whole calls, one per call, their ids those of the request's calls (tool_call_id).
[[nodiscard]] std::string anthropic_text_block(const std::string& text);
[[nodiscard]] std::vector<boost::json::object>
anthropic_tool_use_blocks(const std::vector<forced_call>& calls, const std::string& req_id);

/// The whole reply: `content` is the JSON array of blocks.
/// The `stop_sequence` field: the stop string that ended the reply (JSON text), else null.
[[nodiscard]] std::string anthropic_stop_sequence(const std::string& stop_reason,
                                                  const msg::completion& c);

[[nodiscard]] std::string anthropic_message_body(const std::string& req_id,
                                                 const std::string& model,
                                                 const std::string& content,
                                                 const std::string& stop_reason,
                                                 const msg::completion& c);

/// message_start's data, before any token ("usage" with what is known).
[[nodiscard]] std::string anthropic_message_start(const std::string& req_id,
                                                  const std::string& model,
                                                  std::uint32_t prompt_tokens);

/// {"type":"error","error":{"type":..,"message":..},"request_id":..} with Anthropic's error
/// types for our statuses; `error.details` when the error has them (api_error::details).
[[nodiscard]] std::string anthropic_error_body(const api_error& e, std::string_view request_id);

/// The message id of a request ("msg_" and 32 hex digits, http/reply_id.hpp: a message thread
/// continues from a stored reply named by it, so it is never guessed nor reused after a restart)
/// and its tool_use id ("toolu_" and the request id's number).
[[nodiscard]] std::string anthropic_message_id(const std::string& req_id);
[[nodiscard]] std::string anthropic_tool_use_id(const std::string& req_id);

} // namespace bitnet::http
