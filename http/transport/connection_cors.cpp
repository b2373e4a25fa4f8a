// CORS for browser pages (server option cors_origins, config cors_allowed_origins): an allowed
// Origin gets Access-Control-Allow-Origin (the origin itself, or "*" when any is allowed) on
// every answer, streams included, and a preflight OPTIONS on any API path is answered 204 with
// the methods and headers the page may use, before any key check (browsers send no key with a
// preflight). Credentials (cookies, HTTP auth) are never allowed: the API's keys are headers the
// page sets itself, so even "*" exposes no user's session.
#include "http/transport/connection.hpp"
#include "http/transport/request_errors.hpp"

#include <algorithm>

namespace bitnet::http {

namespace bhttp = boost::beast::http;

namespace {

/// Every header an API family's SDK reads from an answer, exposed to the page on every answer
/// (plain, streamed, error, preflight) so a browser client sees what a server-side one does: the
/// request id in OpenAI's and Anthropic's names, retry hints, the trace context and the server's
/// timings, and the rate-limit headers both SDKs read.
constexpr const char* exposed_headers =
    "X-Request-Id, request-id, Retry-After, retry-after-ms, x-should-retry, Server-Timing, "
    "traceresponse, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, "
    "x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, "
    "x-ratelimit-reset-tokens, anthropic-ratelimit-requests-limit, "
    "anthropic-ratelimit-requests-remaining, anthropic-ratelimit-requests-reset, "
    "anthropic-ratelimit-tokens-limit, anthropic-ratelimit-tokens-remaining, "
    "anthropic-ratelimit-tokens-reset";

/// Header names a page may ask to send: tokens of letters, digits and '-', comma-separated, at
/// most 1 KiB (what a browser sends; anything else gets the default list).
bool plain_header_list(std::string_view v) {
    return v.size() <= 1024 && std::all_of(v.begin(), v.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == ',' || c == ' ';
           });
}

} // namespace

void connection::note_origin(const request& req) {
    cors_origin_.clear();
    const auto& allowed = net_.conf.cors_origins;
    const auto origin = std::string(req[bhttp::field::origin]);
    if (allowed.empty() || origin.empty())
        return;
    if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end())
        cors_origin_ = "*";
    else if (std::find(allowed.begin(), allowed.end(), origin) != allowed.end())
        cors_origin_ = origin;
}

std::string connection::cors_header_lines() const {
    if (cors_origin_.empty())
        return {};
    std::string out = "Access-Control-Allow-Origin: " + cors_origin_ + "\r\n";
    if (cors_origin_ != "*")
        out += "Vary: Origin\r\n";
    out += std::string("Access-Control-Expose-Headers: ") + exposed_headers + "\r\n";
    return out;
}

void connection::set_cors_headers() {
    if (cors_origin_.empty())
        return;
    res_.set(bhttp::field::access_control_allow_origin, cors_origin_);
    if (cors_origin_ != "*")
        res_.set(bhttp::field::vary, "Origin");
    res_.set(bhttp::field::access_control_expose_headers, exposed_headers);
}

bool connection::answer_preflight(const request& req, const std::string& route, bool path_known) {
    if (net_.conf.cors_origins.empty() || req.method() != bhttp::verb::options ||
        req[bhttp::field::access_control_request_method].empty() || !path_known)
        return false;
    if (cors_origin_.empty()) {
        auto e = status_error(403, "origin '" + std::string(req[bhttp::field::origin]) +
                                       "' may not call this server (cors_allowed_origins)");
        e.suggestion = "add the page's origin to cors_allowed_origins";
        send_error(route, e, "-");
        return true;
    }
    res_ = {bhttp::status::no_content, 11};
    set_cors_headers();
    res_.set(bhttp::field::access_control_allow_methods, "GET, POST, DELETE, OPTIONS");
    const std::string_view asked = req[bhttp::field::access_control_request_headers];
    res_.set(bhttp::field::access_control_allow_headers,
             !asked.empty() && plain_header_list(asked)
                 ? std::string(asked)
                 : std::string("Authorization, Content-Type, X-Api-Key"));
    res_.set(bhttp::field::access_control_max_age, "600");
    write_response(route, false);
    return true;
}

} // namespace bitnet::http
