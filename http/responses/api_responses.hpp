// OpenAI's Responses API (POST /v1/responses) on the chat machinery, as the Messages API is
// (http/anthropic/api_anthropic.hpp): a request is translated into the chat completion request that
// asks the same and validated by the same parser; replies and stream events are the Responses
// shapes.
//   request:  model, instructions, input (a string, or items: messages with string or
//             input_text/output_text content, function_call, function_call_output),
//             max_output_tokens, temperature, top_p, tools ({type: "function", name,
//             description, parameters}; [] means none), tool_choice, text.format (text,
//             json_object, json_schema), stream; the other fields as http/field_policy.hpp says.
//             previous_response_id and item_reference items are filled in from the store before
//             this parser (http/responses/response_store.hpp); here they are a 400.
//   reply:    {id: "resp_…", object: "response", status: completed | incomplete, output:
//             [message with output_text | function_call], usage, incomplete_details, the
//             request's settings echoed as OpenAI does, …}. An item cut by max_output_tokens
//             is kept with status incomplete.
//   stream:   response.created, response.in_progress, response.output_item.added,
//             response.content_part.added, response.output_text.delta (or
//             response.function_call_arguments.delta), the matching .done events,
//             response.output_item.done, then response.completed or response.incomplete; a
//             failure or drain cut is an `error` event and response.failed.
#pragma once

#include "http/api_json.hpp"
#include "http/errors.hpp"
#include "messages/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace bitnet::http {

/// The chat completion request (JSON text) that asks what the Responses request `body` asks, or
/// the 400 that says why there is none.
[[nodiscard]] std::variant<std::string, api_error> responses_as_chat(std::string_view body);

/// Parses a Responses request into the input the chat route would get (errors name the
/// Responses fields: `max_tokens` is `max_output_tokens`, `response_format` is `text.format`).
[[nodiscard]] parse_result parse_responses(std::string_view body);

/// The ids of a request's response, its message item and its function call item and call.
[[nodiscard]] std::string response_id(const std::string& req_id);
[[nodiscard]] std::string response_message_id(const std::string& req_id);
[[nodiscard]] std::string response_call_item_id(const std::string& req_id, std::size_t i = 0);

/// An output item: the message with its text, or a function call, number `i` of the turn
/// (`done`: status completed, or incomplete when `incomplete` (cut by max_output_tokens: the
/// text or the arguments so far); else in_progress with what is known so far).
[[nodiscard]] std::string response_message_item(const std::string& req_id, const std::string& text,
                                                bool done, bool incomplete = false);
[[nodiscard]] std::string response_call_item(const std::string& req_id, const std::string& name,
                                             const std::string& arguments, bool done,
                                             std::size_t i = 0, bool incomplete = false);

/// The request's settings as OpenAI's Response object echoes them, from the request `body` as
/// the client sent it (before previous_response_id is expanded): instructions,
/// max_output_tokens, metadata, parallel_tool_calls, previous_response_id, reasoning,
/// temperature and top_p (the values in effect: `temperature` and `top_p` when the request
/// sent none), text, tool_choice, tools, top_logprobs, truncation, user, background,
/// service_tier. JSON members, each after a comma, for response_object.
[[nodiscard]] std::string responses_request_echo(std::string_view body, float temperature,
                                                 float top_p);

/// The whole response object. `output` is the JSON array of items; `status` completed,
/// incomplete (cut by max_output_tokens), in_progress (no usage yet) or failed (with `error`,
/// a JSON object or "null"). `stored` says whether the reply is kept
/// (http/responses/response_store.hpp); `echo` is responses_request_echo's.
[[nodiscard]] std::string response_object(const std::string& req_id, std::int64_t created,
                                          const std::string& model, const std::string& status,
                                          const std::string& output, const msg::completion* c,
                                          const std::string& error, bool stored,
                                          const std::string& echo);

} // namespace bitnet::http
