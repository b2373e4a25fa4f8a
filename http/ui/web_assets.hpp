// The web page's files as the server hands them out: the page itself (GET /) and the files it
// loads from /ui/NAME, each with its media type, and the security headers every one of them is
// sent with. A pure lookup over the bytes compiled in (asset_bytes.hpp), so tests can read the
// page without a server.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace bitnet::http::ui {

struct web_asset {
    std::string_view name;         ///< the file's name under /ui/ ("app.js"); "index.html": GET /
    std::string_view content_type; ///< its media type, with charset for text
    std::string_view bytes;
};

/// The page served at GET /.
[[nodiscard]] web_asset page() noexcept;

/// The file /ui/`name` serves, or nothing (a name not in the table: 404). Names are matched
/// exactly; no path is ever built from them.
[[nodiscard]] std::optional<web_asset> find_asset(std::string_view name) noexcept;

/// Every file, the page first (tests walk them).
[[nodiscard]] std::span<const web_asset> all_assets() noexcept;

/// The headers of every answer of the page and its files: a Content-Security-Policy that runs
/// only the server's own scripts (no inline script, no other origin, no framing), nosniff, no
/// referrer, and no caching beyond revalidation (a swap of the binary shows its own page).
[[nodiscard]] std::span<const std::pair<std::string_view, std::string_view>>
security_headers() noexcept;

} // namespace bitnet::http::ui
