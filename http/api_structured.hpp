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
#include <string_view>
#include <vector>

namespace bitnet::http {

/// Reads `response_format`, `json_schema` (native), `tools` and `tool_choice` (chat), and vLLM's
/// guided fields (api_guided.hpp) into
/// `in.json_schema`, `in.schema_param`, `in.tool_call` and `in.tool_name`. A call forced to one
/// function (named, or the only tool under "required") generates only its arguments, under its
/// parameters as the root schema (`in.tool_name` says whose); several functions under
/// "required" generate `{"name":..,"arguments":..}`, or an array of 1 to max_parallel_tool_calls
/// of those unless `parallel_tool_calls` is false. Errors name the field.
[[nodiscard]] std::optional<api_error> read_structured(const boost::json::object& body,
                                                       api_family kind, inference_input& in);

/// A JSON Schema a client sent under `param`: nested at most max_schema_nesting deep, and free of
/// this server's own keywords (`x-bitnet-*`, which only the server writes: the call union of
/// tool_choice, vLLM's guided text). A keyword is a key where a schema is; the names under
/// `properties`, `$defs` and the like, and the values of `enum`, `const`, `default` and
/// `examples`, are data. Walked with a stack of its own, not recursion.
[[nodiscard]] std::optional<api_error> check_client_schema(const boost::json::value& schema,
                                                           const std::string& param);

/// The most calls one turn may hold under `parallel_tool_calls` (the array's maxItems).
inline constexpr std::size_t max_parallel_tool_calls = 8;

/// A chat turn's tool calls from the constrained text: the arguments of `tool_name` when it is
/// set, else `{"name":..,"arguments":{..}}`, or an array of those (parallel calls). The
/// `tool_calls` array (arguments as a JSON string, as OpenAI sends them), or nothing when the text
/// is not whole (cut by max_tokens). `with_index` adds the stream chunks' "index" field.
[[nodiscard]] std::optional<std::string> tool_calls_json(const std::string& text,
                                                         const std::string& req_id, bool with_index,
                                                         const std::string& tool_name = {});

/// A whole forced call read from the constrained text: its function's name and its arguments
/// (compact JSON text).
struct forced_call {
    std::string name;
    std::string arguments;
};
/// Every call of a whole constrained text, in order (one, or several from an array); `tool_name`
/// as for tool_calls_json; nothing when the text is not whole.
[[nodiscard]] std::optional<std::vector<forced_call>>
parse_forced_calls(const std::string& text, const std::string& tool_name = {});

/// The `tool_calls` array of whole calls (as tool_calls_json of their text).
[[nodiscard]] std::string tool_calls_json(const std::vector<forced_call>& calls,
                                          const std::string& req_id, bool with_index);

/// The calls of an auto turn (tool_choice "auto") from its call text (token_event::call_text:
/// the opener, the call's JSON, perhaps a closing </tool_call>): one call or an array of them,
/// each {"name", "arguments"} or, as Llama 3.1 writes them, {"name", "parameters"}. Nothing when
/// the text holds no whole call.
[[nodiscard]] std::optional<std::vector<forced_call>> parse_auto_calls(std::string_view call_text);

/// The id of a request's call number `i` ("call_" and the request id's number, then "_i" past
/// the first).
[[nodiscard]] std::string tool_call_id(const std::string& req_id, std::size_t i = 0);

} // namespace bitnet::http
