// Counts per second over the last minute, for /v1/stats' tokens/s over 10 s and 60 s windows.
// One slot per whole second of a steady clock; a slot is reused once its second is 64 s old.
// Not thread-safe (metrics guards it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace bitnet::http {

class rate_window {
public:
    using clock = std::chrono::steady_clock;
    static constexpr std::int64_t slots = 64; ///< the current second + 60 past ones fit

    void add(std::uint64_t n, clock::time_point now) {
        const auto sec = second_of(now);
        auto& s = slot_[static_cast<std::size_t>(sec % slots)];
        if (s.second != sec)
            s = {sec, 0};
        s.count += n;
    }

    /// The mean rate per second over the `window_s` whole seconds before the current one (the
    /// current second is still filling), 1 <= window_s <= 60.
    [[nodiscard]] double per_second(std::int64_t window_s, clock::time_point now) const {
        const auto cur = second_of(now);
        std::uint64_t sum = 0;
        for (const auto& s : slot_)
            if (s.second >= cur - window_s && s.second < cur)
                sum += s.count;
        return static_cast<double>(sum) / static_cast<double>(window_s);
    }

private:
    static std::int64_t second_of(clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
    }
    struct slot {
        std::int64_t second = -1;
        std::uint64_t count = 0;
    };
    std::array<slot, slots> slot_{};
};

} // namespace bitnet::http
