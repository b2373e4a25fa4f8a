// W3C trace context, sampling and the span queue (common/trace.hpp).
#include "common/trace.hpp"

#include <doctest/doctest.h>

#include <set>

namespace bitnet::trace {

TEST_CASE("traceparent: the W3C examples parse, and anything malformed is refused") {
    const auto c = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    REQUIRE(c);
    CHECK(to_hex(c->trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(to_hex(c->span) == "00f067aa0ba902b7");
    CHECK(c->sampled());
    CHECK(format_traceparent(*c) == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    const auto off = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    REQUIRE(off);
    CHECK(!off->sampled());
    // A later version may append fields; its first four are read as version 00's.
    CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
    for (const char* bad : {
             "",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
             "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
             "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span id
             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // 00 with more
             "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
             "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
         })
        CHECK_MESSAGE(!parse_traceparent(bad), bad);
}

TEST_CASE("trace ids: random, never zero, and distinct") {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto t = new_trace_id();
        CHECK(t != trace_id{});
        seen.insert(to_hex(t));
        CHECK(new_span_id() != 0);
    }
    CHECK(seen.size() == 1000);
}

TEST_CASE("sampling: off samples nothing, the ratio decides new traces, a caller's flag decides "
          "its own") {
    auto& rec = recorder::process();
    rec.configure({.enabled = false});
    CHECK(!rec.start(std::nullopt).sampled());
    const auto caller =
        parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    CHECK(!rec.start(caller).sampled()); // off: nothing is recorded, whatever the caller says
    CHECK(rec.start(caller).trace == caller->trace);

    rec.configure({.enabled = true, .sample_ratio = 1.0});
    CHECK(rec.start(std::nullopt).sampled());
    rec.configure({.enabled = true, .sample_ratio = 0.0});
    for (int i = 0; i < 100; ++i)
        CHECK(!rec.start(std::nullopt).sampled());
    CHECK(rec.start(caller).sampled()); // parent-based: the caller sampled it
    auto unsampled = *caller;
    unsampled.flags = 0;
    rec.configure({.enabled = true, .sample_ratio = 1.0});
    CHECK(!rec.start(unsampled).sampled());
    // The caller's trace id and span (our parent) are kept.
    CHECK(rec.start(caller).span == caller->span);

    rec.configure({.enabled = true, .sample_ratio = 0.25});
    int n = 0;
    for (int i = 0; i < 4000; ++i)
        n += rec.start(std::nullopt).sampled() ? 1 : 0;
    CHECK(n > 800); // 1000 expected; the bounds are 7 standard deviations wide
    CHECK(n < 1200);
    rec.configure({});
}

TEST_CASE("span queue: bounded, drops counted, taken in batches, stop wakes the taker") {
    auto& rec = recorder::process();
    rec.configure({.enabled = true, .queue_spans = 10});
    (void)rec.take(100000, std::chrono::milliseconds(0)); // whatever an earlier case left
    const auto dropped0 = rec.dropped();
    for (int i = 0; i < 15; ++i) {
        span_record s;
        s.name = "s" + std::to_string(i);
        rec.submit(std::move(s));
    }
    CHECK(rec.dropped() - dropped0 == 5);
    auto first = rec.take(4, std::chrono::milliseconds(0));
    REQUIRE(first.size() == 4);
    CHECK(first[0].name == "s0");
    CHECK(first[3].name == "s3");
    auto rest = rec.take(100, std::chrono::milliseconds(10));
    CHECK(rest.size() == 6);
    // An empty queue waits up to the bound, or until stop().
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(rec.take(1, std::chrono::milliseconds(30)).empty());
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(25));
    rec.stop();
    CHECK(rec.stopped());
    CHECK(rec.wait_stopped(std::chrono::seconds(10)));
    const auto t1 = std::chrono::steady_clock::now();
    CHECK(rec.take(1, std::chrono::seconds(10)).empty());
    CHECK(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(5));
    span_record late;
    const auto before = rec.dropped();
    rec.submit(std::move(late)); // after stop: dropped, not queued
    CHECK(rec.dropped() == before + 1);
    rec.configure({});
}

TEST_CASE("child spans share the parent's trace and flags and name it as parent") {
    const auto p = *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    const auto c = child_of(p, "x", span_kind::client);
    CHECK(c.ctx.trace == p.trace);
    CHECK(c.parent == p.span);
    CHECK(c.ctx.span != p.span);
    CHECK(c.ctx.sampled());
    CHECK(c.kind == span_kind::client);
    CHECK(c.start_ns > 1'600'000'000'000'000'000LL); // a Unix time in nanoseconds
    const auto steady = std::chrono::steady_clock::now() - std::chrono::seconds(2);
    const auto ns = unix_ns(steady);
    CHECK(now_ns() - ns >= 1'900'000'000LL);
    CHECK(now_ns() - ns < 3'000'000'000LL);
}

} // namespace bitnet::trace
