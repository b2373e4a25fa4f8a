// CORS on the real binary (cors_allowed_origins): a browser's preflight is answered before any
// key check, an allowed origin is echoed on every answer (errors and SSE streams too), another
// origin gets nothing it could use, "*" allows any origin without credentials, and a server
// without the key keeps OPTIONS a 405.
#include "server/raw_client.hpp"
#include "server/server_process.hpp"

using namespace bitnet;

namespace {

const std::string key = "cors-test-key-1";

/// The answer's head (status line and headers), lower-cased header names kept as sent.
std::string head_of(const std::string& answer) {
    return answer.substr(0, answer.find("\r\n\r\n"));
}

bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

std::string preflight(std::uint16_t port, const std::string& path, const std::string& origin,
                      const std::string& asked_headers = "authorization, content-type") {
    return test::raw_exchange(
        port, "OPTIONS " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: " + origin +
                  "\r\nAccess-Control-Request-Method: POST\r\n"
                  "Access-Control-Request-Headers: " +
                  asked_headers + "\r\n\r\n");
}

std::string post(std::uint16_t port, const std::string& path, const std::string& origin,
                 const std::string& body, const std::string& bearer = key) {
    return test::raw_exchange(
        port, "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: " + origin +
                  "\r\nContent-Type: application/json\r\n" +
                  (bearer.empty() ? std::string() : "Authorization: Bearer " + bearer + "\r\n") +
                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

const std::string completion = R"({"prompt":"Once","max_tokens":2})";

} // namespace

TEST_CASE("CORS: preflights before the key check, the allowed origin on every answer, streams "
          "included, nothing for other origins") {
    test::server_process s(
        {"--api-keys", key, "--cors-allowed-origins", "https://app.example,http://localhost:5173"});
    const auto pre = preflight(s.port(), "/v1/chat/completions", "https://app.example");
    INFO(pre);
    CHECK(test::status_of(pre) == 204);
    const auto h = head_of(pre);
    CHECK(has(h, "Access-Control-Allow-Origin: https://app.example"));
    CHECK(has(h, "Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS"));
    CHECK(has(h, "Access-Control-Allow-Headers: authorization, content-type"));
    CHECK(has(h, "Access-Control-Max-Age: 600"));
    CHECK(has(h, "Vary: Origin"));
    CHECK_FALSE(has(h, "Allow-Credentials"));
    // Every API path has one, the admin routes too; an unknown path is still a 404.
    CHECK(test::status_of(preflight(s.port(), "/v1/models/load", "http://localhost:5173")) == 204);
    // An unknown path is no API path: no preflight answer (here the key check comes first).
    CHECK(test::status_of(preflight(s.port(), "/v1/nothing", "https://app.example")) == 401);
    // Asked headers that are not a plain list get the default list.
    CHECK(has(preflight(s.port(), "/v1/completions", "https://app.example", "x-a; evil=1"),
              "Access-Control-Allow-Headers: Authorization, Content-Type, X-Api-Key"));

    // Another origin: refused, and told why.
    const auto evil = preflight(s.port(), "/v1/completions", "https://evil.example");
    CHECK(test::status_of(evil) == 403);
    CHECK_FALSE(has(head_of(evil), "Access-Control-Allow-Origin"));
    CHECK(has(evil, "cors_allowed_origins"));

    // The real request: the origin comes back, and the page may read X-Request-Id.
    const auto ok = post(s.port(), "/v1/completions", "https://app.example", completion);
    CHECK(test::status_of(ok) == 200);
    CHECK(has(head_of(ok), "Access-Control-Allow-Origin: https://app.example"));
    CHECK(has(head_of(ok), "Access-Control-Expose-Headers: X-Request-Id"));
    // An error too (the page must be able to read why), here the missing key.
    const auto no_key = post(s.port(), "/v1/completions", "https://app.example", completion, "");
    CHECK(test::status_of(no_key) == 401);
    CHECK(has(head_of(no_key), "Access-Control-Allow-Origin: https://app.example"));
    // A stream's head carries it as well.
    const auto sse = post(s.port(), "/v1/completions", "http://localhost:5173",
                          R"({"prompt":"Once","max_tokens":2,"stream":true})");
    CHECK(test::status_of(sse) == 200);
    CHECK(has(head_of(sse), "Content-Type: text/event-stream"));
    CHECK(has(head_of(sse), "Access-Control-Allow-Origin: http://localhost:5173"));
    // Another origin's request is served (CORS is the browser's check) without the header.
    const auto other = post(s.port(), "/v1/completions", "https://evil.example", completion);
    CHECK(test::status_of(other) == 200);
    CHECK_FALSE(has(head_of(other), "Access-Control-Allow-Origin"));
}

TEST_CASE("CORS: '*' allows any origin, never with credentials, and without the key OPTIONS "
          "stays a 405") {
    {
        test::server_process s({"--cors-allowed-origins", "*"});
        const auto pre = preflight(s.port(), "/v1/completions", "https://anywhere.example");
        CHECK(test::status_of(pre) == 204);
        CHECK(has(head_of(pre), "Access-Control-Allow-Origin: *"));
        CHECK_FALSE(has(head_of(pre), "Allow-Credentials"));
        CHECK_FALSE(has(head_of(pre), "Vary: Origin"));
        const auto ok = post(s.port(), "/v1/completions", "https://anywhere.example", completion);
        CHECK(has(head_of(ok), "Access-Control-Allow-Origin: *"));
    }
    test::server_process plain;
    const auto pre = preflight(plain.port(), "/v1/completions", "https://app.example");
    CHECK(test::status_of(pre) == 405);
    const auto ok = post(plain.port(), "/v1/completions", "https://app.example", completion);
    CHECK(test::status_of(ok) == 200);
    CHECK_FALSE(has(head_of(ok), "Access-Control-Allow-Origin"));
}
