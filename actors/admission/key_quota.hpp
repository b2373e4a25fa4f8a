// Per-key request quotas (README.md, "Serving": a key past its quota gets a 429
// rate_limit_error with Retry-After), counted in sequences: a request with n choices counts n. The
// quota is a token bucket per API key: `requests_per_minute` refill continuously, up to `burst`
// saved (0 = one minute's worth). Requests without a key share one bucket (the empty key). A plain
// class, owned by admission and tested without actors.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace bitnet::actors {

struct quota_limits {
    std::uint32_t requests_per_minute = 0; ///< 0 = no quota
    std::uint32_t burst = 0;               ///< bucket size; 0 = requests_per_minute
};

class key_quota {
public:
    using clock = std::chrono::steady_clock;

    explicit key_quota(quota_limits limits);

    /// Counts a request of `key` at `now` that runs `sequences` sequences (OpenAI `n`: each
    /// choice is a sequence, so n = 8 costs what 8 requests cost; never more than the bucket
    /// holds, or it could never pass). 0 when it is within the quota; otherwise the whole
    /// seconds (>= 1) until the key's bucket holds that much again (HTTP Retry-After), and
    /// nothing is counted.
    [[nodiscard]] std::uint32_t take(const std::string& key, clock::time_point now,
                                     std::uint32_t sequences = 1);

    [[nodiscard]] bool enabled() const noexcept { return limits_.requests_per_minute > 0; }
    [[nodiscard]] const quota_limits& limits() const noexcept { return limits_; }

private:
    struct bucket {
        double tokens = 0.0;
        clock::time_point at{};
    };
    quota_limits limits_;
    std::unordered_map<std::string, bucket> buckets_;
};

} // namespace bitnet::actors
