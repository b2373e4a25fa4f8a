// Per-key quotas: a token bucket per key, Retry-After from the refill rate, keys independent.
#include "actors/admission/key_quota.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace std::chrono_literals;
using actors::key_quota;

TEST_CASE("a key gets its burst, then waits for the refill, other keys are not affected") {
    key_quota q({.requests_per_minute = 6, .burst = 2}); // one request per 10 s, two saved
    const auto t0 = key_quota::clock::time_point{} + 1000s;
    CHECK(q.take("a", t0) == 0);
    CHECK(q.take("a", t0) == 0);
    CHECK(q.take("a", t0) == 10); // empty: a whole request refills in 10 s
    CHECK(q.take("b", t0) == 0);  // another key has its own bucket
    CHECK(q.take("a", t0 + 4s) == 6);
    CHECK(q.take("a", t0 + 10s) == 0); // refilled one
    CHECK(q.take("a", t0 + 10s) == 10);
    // A long pause refills up to the burst, never more.
    CHECK(q.take("a", t0 + 1h) == 0);
    CHECK(q.take("a", t0 + 1h) == 0);
    CHECK(q.take("a", t0 + 1h) > 0);
}

TEST_CASE("no quota configured: every request passes, and burst defaults to a minute of requests") {
    key_quota off({});
    const auto t0 = key_quota::clock::time_point{} + 5s;
    for (int i = 0; i < 1000; ++i)
        REQUIRE(off.take("k", t0) == 0);
    key_quota q({.requests_per_minute = 120});
    int passed = 0;
    while (q.take("", t0) == 0)
        ++passed;
    CHECK(passed == 120);
    CHECK(q.take("", t0) == 1); // 2 per second: under a second, rounded up to 1
}

TEST_CASE("a request with n choices costs n sequences, never more than the bucket holds") {
    key_quota q({.requests_per_minute = 60, .burst = 10}); // one sequence per second
    const auto t0 = key_quota::clock::time_point{} + 1000s;
    CHECK(q.take("a", t0, 8) == 0);
    CHECK(q.take("a", t0, 8) == 6); // 2 left: 6 more seconds for 8
    CHECK(q.take("a", t0, 2) == 0);
    // n larger than the bucket: it costs the whole bucket, so it can pass once the bucket is full.
    CHECK(q.take("b", t0, 50) == 0);
    CHECK(q.take("b", t0, 50) == 10);
    CHECK(q.take("b", t0 + 10s, 50) == 0);
}
