// Structured output on the inference routes: OpenAI's `response_format` (json_object,
// json_schema), the native routes' `json_schema`, and chat `tools` with a forcing `tool_choice`,
// all turned into one JSON Schema (text) that the model version compiles and decodes under; and
// the tool-call replies built from the constrained text. The schema itself is checked where it
// is compiled (the batcher), which names an unsupported keyword in a 400.
#pragma once

#include "http/api_json.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace bitnet::http {

/// Reads `response_format`, `json_schema` (native), `tools` and `tool_choice` (chat) into
/// `in.json_schema`, `in.schema_param` and `in.tool_call`. Errors name the field.
[[nodiscard]] std::optional<api_error> read_structured(const boost::json::object& body,
                                                       api_kind kind, inference_input& in);

/// A chat tool call from the constrained text `{"name":..,"arguments":{..}}`: the `tool_calls`
/// array (arguments as a JSON string, as OpenAI sends them), or nothing when the text is not a
/// whole call (cut by max_tokens). `index` adds the stream chunks' "index" field.
[[nodiscard]] std::optional<std::string>
tool_calls_json(const std::string& text, const std::string& req_id, bool with_index);

} // namespace bitnet::http
