// The unguessable part of the ids a reply is stored under (Responses' resp_/msg_/fc_ ids,
// Anthropic's msg_ ids): a stored reply is named by its id alone within its key, so an id must
// not be guessable from another, and an id from before a restart must name nothing now.
#pragma once

#include <string>

namespace bitnet::http {

/// 32 hex digits: 128 bits of HMAC-SHA-256 of `req_id` under a key drawn once per process from
/// the OS. The same whenever it is asked for the same request id.
[[nodiscard]] std::string reply_id_of(const std::string& req_id);

} // namespace bitnet::http
