// The OTLP exporter's configuration parsing (http/observe/otlp_exporter.hpp) and the JSON log line
// (http/observe/log_context.hpp). The exporter's network behaviour (batches, retries, drops) runs
// against a real collector in tests/server/tracing_test.cpp.
#include "http/observe/otlp_exporter.hpp"

#include "http/observe/log_context.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

namespace bitnet::http {

TEST_CASE("otlp endpoint: a base URL gets /v1/traces, a full one is kept, ports default") {
    auto t = parse_otlp_endpoint("http://collector:4318");
    REQUIRE(t);
    CHECK(!t->tls);
    CHECK(t->host == "collector");
    CHECK(t->port == "4318");
    CHECK(t->path == "/v1/traces");
    t = parse_otlp_endpoint("https://otel.example.com/base/");
    REQUIRE(t);
    CHECK(t->tls);
    CHECK(t->port == "443");
    CHECK(t->path == "/base/v1/traces");
    t = parse_otlp_endpoint("http://127.0.0.1:9999/v1/traces");
    REQUIRE(t);
    CHECK(t->path == "/v1/traces");
    t = parse_otlp_endpoint("http://[::1]:4318");
    REQUIRE(t);
    CHECK(t->host == "::1");
    CHECK(t->port == "4318");
    t = parse_otlp_endpoint("http://collector");
    REQUIRE(t);
    CHECK(t->port == "4318");
    for (const char* bad : {"collector:4318", "grpc://c:4317", "http://", "http://:4318",
                            "http://c:0", "http://c:99999", "http://c:12ab", "http://[::1"}) {
        const auto r = parse_otlp_endpoint(bad);
        CHECK_MESSAGE(!r, bad);
        if (!r)
            CHECK(r.error().param == "otlp_endpoint");
    }
}

TEST_CASE("otlp headers: name=value items, values may hold '=', no line breaks or odd names") {
    const auto h = parse_otlp_headers({"authorization=Bearer a=b", "x-scope_org=t1"});
    REQUIRE(h);
    REQUIRE(h->size() == 2);
    CHECK((*h)[0].first == "authorization");
    CHECK((*h)[0].second == "Bearer a=b");
    CHECK((*h)[1].first == "x-scope_org");
    for (const char* bad : {"novalue", "=v", "bad name=v", "x=a\r\nInjected: 1"}) {
        const auto r = parse_otlp_headers({bad});
        CHECK_MESSAGE(!r, bad);
    }
}

TEST_CASE("JSON log lines: one object with the correlation fields of the current scope") {
    CHECK(current_log_fields() == nullptr);
    {
        log_scope outer({"req-1", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "m"});
        REQUIRE(current_log_fields());
        CHECK(current_log_fields()->request_id == "req-1");
        {
            log_scope inner({"req-2", "", "", ""});
            CHECK(current_log_fields()->request_id == "req-2");
        }
        CHECK(current_log_fields()->request_id == "req-1");
        const auto line = json_log_line("2026-11-26T10:00:00.000001Z", "info", "a \"quoted\"\nline",
                                        "node-a", current_log_fields());
        const auto o = boost::json::parse(line).as_object();
        CHECK(o.at("time").as_string() == "2026-11-26T10:00:00.000001Z");
        CHECK(o.at("level").as_string() == "info");
        CHECK(o.at("message").as_string() == "a \"quoted\"\nline");
        CHECK(o.at("node").as_string() == "node-a");
        CHECK(o.at("request_id").as_string() == "req-1");
        CHECK(o.at("trace_id").as_string() == "4bf92f3577b34da6a3ce929d0e0e4736");
        CHECK(o.at("span_id").as_string() == "00f067aa0ba902b7");
        CHECK(o.at("model").as_string() == "m");
        CHECK(line.find('\n') == std::string::npos);
    }
    CHECK(current_log_fields() == nullptr);
    // Outside a request: no correlation fields at all (not empty strings).
    const auto o = boost::json::parse(json_log_line("t", "warn", "m", "n", nullptr)).as_object();
    CHECK(!o.contains("request_id"));
    CHECK(!o.contains("trace_id"));
}

} // namespace bitnet::http
