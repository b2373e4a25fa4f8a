#include "actors/admission/key_quota.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::actors {

key_quota::key_quota(quota_limits limits)
    : limits_(limits) {
    if (limits_.burst == 0)
        limits_.burst = limits_.requests_per_minute;
}

std::uint32_t key_quota::take(const std::string& key, clock::time_point now,
                              std::uint32_t sequences) {
    if (!enabled())
        return 0;
    const double capacity = limits_.burst;
    const double per_s = limits_.requests_per_minute / 60.0;
    auto [it, fresh] = buckets_.try_emplace(key, bucket{capacity, now});
    auto& b = it->second;
    if (!fresh && now > b.at) {
        b.tokens = std::min(capacity,
                            b.tokens + std::chrono::duration<double>(now - b.at).count() * per_s);
        b.at = now;
    }
    const double cost = std::clamp(static_cast<double>(sequences), 1.0, capacity);
    if (b.tokens >= cost) {
        b.tokens -= cost;
        return 0;
    }
    const double wait_s = (cost - b.tokens) / per_s;
    return static_cast<std::uint32_t>(std::max(1.0, std::ceil(wait_s)));
}

} // namespace bitnet::actors
