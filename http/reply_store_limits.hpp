// The bounds of the reply store (http/responses/response_store.hpp): stored Responses replies and
// Anthropic message threads, per API key and in all. Server configuration (responses_store_max,
// responses_store_ttl_s, responses_store_bytes), so the server's options name them without
// knowing either family.
#pragma once

#include <chrono>
#include <cstddef>

namespace bitnet::http {

struct response_store_limits {
    std::size_t max_responses = 1000; ///< per key; 0: nothing is stored (a name is a 400)
    std::chrono::seconds ttl{3600};
    std::size_t max_bytes = 64u << 20;    ///< per key
    std::size_t total_bytes = 256u << 20; ///< all keys together
};

} // namespace bitnet::http
