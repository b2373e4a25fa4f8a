// The OpenAPI 3.1 document of every route (http/openapi.json, committed beside the code), built
// into the binary and served at GET /openapi.json. Tests hold it against the route table and the
// live server's answers, so the reference cannot drift from what the server does.
#pragma once

#include <string_view>

namespace bitnet::http {

/// The bytes of http/openapi.json as they were at build time.
[[nodiscard]] std::string_view openapi_document() noexcept;

} // namespace bitnet::http
