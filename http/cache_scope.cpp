#include "http/cache_scope.hpp"

#include <algorithm>

namespace bitnet::http {

namespace {

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

} // namespace

std::uint64_t cache_scope_of(const std::vector<std::string>& api_keys,
                             const std::vector<std::vector<std::string>>& share_groups,
                             std::string_view client_key, std::string_view salt) {
    std::string who;
    if (!api_keys.empty()) {
        who = "key:" + std::string(client_key);
        for (std::size_t g = 0; g < share_groups.size(); ++g)
            if (std::find(share_groups[g].begin(), share_groups[g].end(), client_key) !=
                share_groups[g].end()) {
                who = "group:" + std::to_string(g);
                break;
            }
    }
    if (who.empty() && salt.empty())
        return 0;
    // Length-prefixed parts, so no (key, salt) pair can spell another's; never 0 (shared).
    const auto h = fnv1a(salt, fnv1a(std::to_string(who.size()) + ":" + who + "|"));
    return h == 0 ? 1 : h;
}

} // namespace bitnet::http
