// The prefix cache's scope of a request (msg::generate_request::cache_scope). A cached KV block
// answers a later prompt faster, and that difference in time is a side channel: who else sent
// this prompt? So with API keys configured a block is shared only by requests of the same key
// (as OpenAI scopes its cache per organisation), or of one key group the operator declared
// (prefix_cache_share_groups: keys that may see each other's prompts, e.g. one application's
// keys behind a shared system prompt). A request's `cache_salt` (vLLM's field) narrows the scope
// further. Without API keys (a single-tenant server) and without a salt, everything shares.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::http {

/// The scope of a request with key `client_key` and salt `salt`; `api_keys` empty = a server
/// without keys; `share_groups` the operator's groups of keys. 0 = the shared scope.
[[nodiscard]] std::uint64_t
cache_scope_of(const std::vector<std::string>& api_keys,
               const std::vector<std::vector<std::string>>& share_groups,
               std::string_view client_key, std::string_view salt);

/// The longest `cache_salt` a request may send.
inline constexpr std::size_t max_cache_salt_bytes = 256;

} // namespace bitnet::http
