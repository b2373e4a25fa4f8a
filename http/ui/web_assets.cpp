#include "http/ui/web_assets.hpp"

#include "http/ui/asset_bytes.hpp"

#include <array>

namespace bitnet::http::ui {

namespace {

constexpr std::string_view k_js = "text/javascript; charset=utf-8";

const std::array<web_asset, 10>& table() noexcept {
    static const std::array<web_asset, 10> t{{
        {"index.html", "text/html; charset=utf-8", ui_index_html()},
        {"style.css", "text/css; charset=utf-8", ui_style_css()},
        {"app.js", k_js, ui_app_js()},
        {"api.js", k_js, ui_api_js()},
        {"chat.js", k_js, ui_chat_js()},
        {"models.js", k_js, ui_models_js()},
        {"metrics.js", k_js, ui_metrics_js()},
        {"cluster.js", k_js, ui_cluster_js()},
        {"charts.js", k_js, ui_charts_js()},
        {"favicon.svg", "image/svg+xml", ui_favicon_svg()},
    }};
    return t;
}

// connect-src 'self': the page talks to this server only; style-src without 'unsafe-inline':
// no style attribute or <style> either, so injected markup could not even restyle the page.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> k_headers{{
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cache-Control", "no-cache"},
}};

} // namespace

web_asset page() noexcept {
    return table().front();
}

std::optional<web_asset> find_asset(std::string_view name) noexcept {
    for (const auto& a : table())
        if (a.name == name && a.name != "index.html")
            return a;
    return std::nullopt;
}

std::span<const web_asset> all_assets() noexcept {
    return table();
}

std::span<const std::pair<std::string_view, std::string_view>> security_headers() noexcept {
    return k_headers;
}

} // namespace bitnet::http::ui
