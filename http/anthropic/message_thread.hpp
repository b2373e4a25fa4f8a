// Anthropic's message threads on POST /v1/messages (the `thread` field, beta
// message-threads-2026-08-12), as @anthropic-ai/sdk's message threads and default toolRunner send
// it: `{"type": "create"}` with the whole request, then `{"type": "continue",
// "previous_message_id": ID}` with only the new messages and without `system` and `tools`, which
// the thread keeps from its create. The server keeps each threaded reply's record (the store is
// http/responses/response_store.hpp's, per API key, with its bounds) and rebuilds a continue into
// the whole request before it is parsed, so every limit and check holds as for one sent whole.
// This file holds the shapes only (what `thread` says, the rebuilt request, the record, the
// errors the SDK recovers from by `error.details.error_code`); the session joins them to the
// store.
#pragma once

#include "http/errors.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

namespace bitnet::http {

/// What a request's `thread` asks.
struct message_thread {
    enum class kind { none, create, resume }; ///< resume: "continue"
    kind type = kind::none;
    std::string previous_message_id; ///< resume: the stored reply it continues
};

/// The longest previous_message_id read (ours are "msg_" and 32 hex digits).
inline constexpr std::size_t max_thread_id_bytes = 128;

/// `thread` of a Messages request: absent or null none, {"type": "create"}, or {"type":
/// "continue", "previous_message_id": ID}; any other shape is a 400 naming thread. A continue that
/// sends `system` or `tools` is a 400 naming it: the thread keeps those of its create.
[[nodiscard]] std::variant<message_thread, api_error>
read_message_thread(const boost::json::object& body);

/// A threaded request made whole, without `thread`: `body` is what the Messages parser gets,
/// `head` the start of the record its reply leaves (thread_record).
struct thread_expansion {
    std::string body;
    std::string head;
};

/// `request` (its `thread` read by read_message_thread) made whole: a create as it came; a
/// continue with the stored `record`'s system, tools and messages, its own messages after them.
/// The rebuilt request is bounded by `max_bytes` (the body limit), the stored part counted before
/// it is copied: past it, a 400 naming the limit. A continue without new messages is a 400.
[[nodiscard]] std::variant<thread_expansion, api_error>
expand_message_thread(boost::json::object request, std::string_view record, std::size_t max_bytes);

/// The record a threaded reply leaves: {"system", "tools", "messages"}, its request's messages
/// then the reply (`content`, the reply's content blocks as JSON) as the assistant's turn.
[[nodiscard]] std::string thread_record(const std::string& head, const std::string& content);

/// The refusals the SDK recovers from, each with `error.details.error_code` and
/// `x-should-retry: false`: thread_not_found (404: this key stored no such reply, or it expired
/// or was evicted), thread_already_continued and thread_continue_in_flight (409: a stored reply
/// is continued once), thread_unsupported_request (400, unsupported ["thread"]: this server
/// stores no replies); the SDK replays the whole conversation under a new create for the first
/// three, and its tool runner goes on without a thread after the last.
enum class thread_refusal { not_found, already_continued, in_flight, unsupported };
[[nodiscard]] api_error thread_error(thread_refusal why, const std::string& id);

} // namespace bitnet::http
