// HTTP/1.1 framing as RFC 9112 states it, and requests read slower than a stated rate, on the
// real binary with raw bytes: Transfer-Encoding that does not end in chunked, codings the server
// does not decode, Host, HEAD, Expect: 100-continue; headers and bodies that trickle, and
// half-sent requests holding every connection slot. Waits are bounded reads; what is asserted
// is what the server answered or whether it closed, never how long it took.
#include "server/raw_client.hpp"
#include "server/server_process.hpp"

#include <list>
#include <string>
#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

const std::string tokenize_body = R"({"text":"ab"})";

std::string tokenize_head(const std::string& extra) {
    return "POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
           "Content-Type: application/json\r\n" +
           extra;
}

/// Whether the server closes `c` within `limit` (a bounded read; EOF or reset).
bool closed_within(test::raw_conn& c, std::chrono::milliseconds limit) {
    bool closed = false;
    (void)c.read_until(limit, {}, &closed);
    return closed;
}

} // namespace

TEST_CASE("framing: Transfer-Encoding not ending in chunked is a 400 and close, beside "
          "Content-Length too, and gzip before chunked is a 501") {
    test::server_process s({}, {.admin_open = false});
    const auto cl = "Content-Length: " + std::to_string(tokenize_body.size()) + "\r\n";
    // Framed by Content-Length before: a 200.
    const auto gzip_cl = test::raw_exchange(
        s.port(), tokenize_head("Transfer-Encoding: gzip\r\n" + cl + "\r\n") + tokenize_body, 5s);
    CHECK(test::status_of(gzip_cl) == 400);
    CHECK(gzip_cl.find("Connection: close") != std::string::npos);
    CHECK(gzip_cl.find("must end in chunked") != std::string::npos);
    const auto gzip_only = test::raw_exchange(
        s.port(), tokenize_head("Transfer-Encoding: gzip\r\n\r\n") + tokenize_body, 5s);
    CHECK(test::status_of(gzip_only) == 400);
    // Accepted with the gzip ignored before.
    const auto chunk = "d\r\n" + tokenize_body + "\r\n0\r\n\r\n";
    const auto gzip_chunked = test::raw_exchange(
        s.port(), tokenize_head("Transfer-Encoding: gzip, chunked\r\n\r\n") + chunk, 5s);
    CHECK(test::status_of(gzip_chunked) == 501);
    CHECK(gzip_chunked.find("unsupported_transfer_coding") != std::string::npos);
    // chunked alone and Content-Length alone are read as ever.
    CHECK(test::status_of(test::raw_exchange(
              s.port(), tokenize_head("Transfer-Encoding: chunked\r\n\r\n") + chunk, 5s)) == 200);
    CHECK(test::status_of(
              test::raw_exchange(s.port(), tokenize_head(cl + "\r\n") + tokenize_body, 5s)) == 200);
}

TEST_CASE("framing: an HTTP/1.1 request needs exactly one Host") {
    test::server_process s({}, {.admin_open = false});
    const auto none =
        test::raw_exchange(s.port(), "GET /health/live HTTP/1.1\r\nConnection: close\r\n\r\n", 5s);
    CHECK(test::status_of(none) == 400);
    CHECK(none.find("exactly one Host") != std::string::npos);
    const auto two = test::raw_exchange(
        s.port(), "GET /health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n",
        5s);
    CHECK(test::status_of(two) == 400);
    CHECK(test::status_of(test::raw_exchange(s.port(), "GET /health/live HTTP/1.0\r\n\r\n", 5s)) ==
          200);
}

TEST_CASE("HEAD answers where GET does: GET's headers, no body") {
    test::server_process s({}, {.admin_open = false});
    for (const char* path : {"/health/live", "/v1/models"}) {
        CAPTURE(path);
        const auto get = test::raw_exchange(
            s.port(),
            "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 5s);
        const auto head = test::raw_exchange(
            s.port(),
            "HEAD " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 5s);
        CHECK(test::status_of(head) == 200); // 405 before
        const auto end = head.find("\r\n\r\n");
        REQUIRE(end != std::string::npos);
        CHECK(head.size() == end + 4); // nothing after the headers
        const auto get_body = get.size() - get.find("\r\n\r\n") - 4;
        CHECK(head.find("Content-Length: " + std::to_string(get_body)) != std::string::npos);
    }
    // Where GET is not allowed, neither is HEAD.
    CHECK(test::status_of(test::raw_exchange(
              s.port(),
              "HEAD /v1/chat/completions HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 5s)) ==
          405);
}

TEST_CASE("Expect: 100-continue is answered before the body is sent") {
    test::server_process s({}, {.admin_open = false});
    test::raw_conn c(s.port());
    REQUIRE(c.send(tokenize_head("Expect: 100-continue\r\nContent-Length: " +
                                 std::to_string(tokenize_body.size()) + "\r\n\r\n")));
    const auto interim = c.read_until(5s, "\r\n\r\n");
    CHECK(test::status_of(interim) == 100);
    REQUIRE(c.send(tokenize_body));
    CHECK(test::status_of(c.read_until(5s, "\r\n\r\n")) == 200);
    const auto odd =
        test::raw_exchange(s.port(), tokenize_head("Expect: tea\r\nContent-Length: 0\r\n\r\n"), 5s);
    CHECK(test::status_of(odd) == 417);
}

TEST_CASE("slow reads: headers slower than request_header_timeout_ms and a body under "
          "request_body_min_rate are closed") {
    test::server_process s(
        {"--request-header-timeout-ms", "300", "--request-body-min-rate", "1000"},
        {.admin_open = false});
    test::raw_conn header(s.port());
    REQUIRE(header.send("GET /health/live HTTP/1.1\r\nHost: t\r\n"));
    CHECK(closed_within(header, 10s)); // read_timeout_ms (30 s) before
    test::raw_conn body(s.port());
    REQUIRE(body.send(tokenize_head("Content-Length: 100000\r\n\r\n") + "{\"text\":\""));
    CHECK(closed_within(body, 10s)); // 0.3 s + 9 bytes' worth at 1000 bytes/s
    // A request that keeps to the rate is read whole.
    test::raw_conn steady_client(s.port());
    REQUIRE(steady_client.send(
        tokenize_head("Content-Length: " + std::to_string(tokenize_body.size()) + "\r\n\r\n")));
    std::this_thread::sleep_for(100ms);
    REQUIRE(steady_client.send(tokenize_body));
    CHECK(test::status_of(steady_client.read_until(10s, "\r\n\r\n")) == 200);
}

TEST_CASE("half-sent requests holding every connection slot do not lock a working client out") {
    constexpr int slots = 64;
    test::server_process s({"--max-connections", std::to_string(slots)}, {.admin_open = false});
    std::list<test::raw_conn> half;
    for (int i = 0; i < slots; ++i) {
        half.emplace_back(s.port());
        REQUIRE(half.back().send("POST /v1/tokenize HTTP/1.1\r\nHost: t\r\n"));
    }
    // Past stalled_read_after (1 s) they are stalled reads; before the fix every probe got 503
    // until read_timeout_ms (30 s) freed a slot.
    std::this_thread::sleep_for(1500ms);
    for (int i = 0; i < 8; ++i) {
        const auto r = test::raw_exchange(
            s.port(), "GET /health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 5s);
        CHECK(test::status_of(r) == 200);
    }
    const auto stats = test::parse_object(s.get("/v1/stats").body);
    CHECK(stats.at("connections").as_object().at("reclaimed").as_int64() >=
          1); // one made room for all
}

TEST_CASE("half-sent requests from a few addresses holding every slot do not lock out a client "
          "that holds none, however young they are") {
    constexpr int slots = 48;
    test::server_process s({"--max-connections", std::to_string(slots)}, {.admin_open = false});
    // Two addresses hold every slot between them with requests whose headers never end. They are
    // probed at once: none is idle and none has stalled for stalled_read_after (1 s) yet, as when
    // attackers retake every slot the moment it frees (each retake reclaims a stalled one, so
    // every held read stays young); before, every probe then got 503.
    std::list<test::raw_conn> half;
    for (int i = 0; i < slots; ++i) {
        half.emplace_back(s.port(), i % 2 == 0 ? 0x7f000002u : 0x7f000003u);
        REQUIRE(half.back().send("POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nX-Slow: "));
    }
    int served = 0;
    for (int i = 0; i < 8; ++i) {
        const auto r = test::raw_exchange(
            s.port(), "GET /health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 5s);
        served += test::status_of(r) == 200 ? 1 : 0;
    }
    CHECK(served == 8);
    const auto stats = test::parse_object(s.get("/v1/stats").body);
    CHECK(stats.at("connections").as_object().at("reclaimed").as_int64() >= 1); // room for all
}
