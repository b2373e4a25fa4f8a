// vLLM's structured output fields on the native, completions and chat routes: `guided_json` (a
// JSON Schema), `guided_choice` (the reply is exactly one of the strings), `guided_regex` (the
// whole reply matches the regex), and the newer `structured_outputs` object holding one of
// `json`, `choice`, `regex` or `json_object`. They decode on the same grammar as response_format
// (model/constrain/; choices and regexes over plain text: text_grammar.hpp), and take the place
// of a schema: one structured output per request.
#pragma once

#include "http/api_json.hpp"

#include <boost/json/object.hpp>

#include <optional>

namespace bitnet::http {

/// Reads the fields above into `in.json_schema` (a choice or regex as the internal text spec)
/// and `in.schema_param` (the field). A second structured output (response_format, json_schema,
/// a forced tool call, two guided fields) is a 400, and so are the forms the grammar lacks
/// (grammar, structural_tag). Errors name the field.
[[nodiscard]] std::optional<api_error> read_guided(const boost::json::object& body,
                                                   inference_input& in);

} // namespace bitnet::http
