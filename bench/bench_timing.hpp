// What the end-to-end benchmarks share: wall-clock seconds, the median they quote, and exiting
// with a message when a step they time fails.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace bitnet::bench {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The middle run (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Exits with "<program>: <what>" unless `ok`.
inline void must(bool ok, const char* program, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "%s: %s\n", program, what.c_str());
        std::exit(1);
    }
}

} // namespace bitnet::bench
