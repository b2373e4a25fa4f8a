// Chat `messages` as the clients people use send them (OpenAI's SDKs, the AI SDK, LangChain):
// roles system, developer (read as system), user, assistant (its content may be null when it
// carries `tool_calls`) and tool (a call's result, with `tool_call_id`); content as a string or
// an array of text parts. The result is what the serving version's chat template renders
// (model/tokenizer/chat_template.hpp). Anything else is a 400 that names what is wrong.
#pragma once

#include "http/errors.hpp"
#include "messages/types.hpp"

#include <boost/json/fwd.hpp>

#include <optional>
#include <vector>

namespace bitnet::http {

/// At most this many tool calls in one assistant message.
inline constexpr std::size_t max_tool_calls_per_message = 128;

/// Reads `messages` (the request's field) into `out`; an error names the message's index.
[[nodiscard]] std::optional<api_error> read_chat_messages(const boost::json::value& messages,
                                                          std::vector<msg::chat_message>& out);

} // namespace bitnet::http
