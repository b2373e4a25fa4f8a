// The per-second window behind /v1/stats' tokens/s: whole seconds, the current one excluded,
// slots a minute old forgotten.
#include "http/observe/rate_window.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using bitnet::http::rate_window;

TEST_CASE("rate_window averages whole past seconds and forgets what is a minute old") {
    rate_window w;
    const auto t0 = rate_window::clock::time_point{} + 1000s;
    for (int s = 0; s < 20; ++s)
        w.add(10, t0 + std::chrono::seconds(s) + 300ms); // 10 per second for 20 s
    w.add(500, t0 + 20s);                                // the current second: not counted yet
    const auto now = t0 + 20s + 500ms;
    CHECK(w.per_second(10, now) == doctest::Approx(10.0));
    CHECK(w.per_second(60, now) == doctest::Approx(200.0 / 60.0));
    CHECK(w.per_second(10, t0 + 21s) == doctest::Approx((90.0 + 500.0) / 10.0));
    // Two minutes later every slot is stale.
    CHECK(w.per_second(60, t0 + 140s) == 0.0);
    // A reused slot starts from zero.
    w.add(3, t0 + 140s);
    CHECK(w.per_second(10, t0 + 141s) == doctest::Approx(0.3));
}
