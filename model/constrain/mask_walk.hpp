// A token mask's trie walk as a value: the trie nodes on its path with the matcher state at each,
// the tokens found so far and what the walk has spent. compiled_constraint::mask_slice runs it in
// slices of CPU time, so the mask worker can share its one thread between tenants: a heavy mask
// stops at its next budget check when its slice is over and goes on, where it stopped, in its
// tenant's next turn, while another tenant's mask runs in between. The budget of one mask
// (limits::max_mask_steps, max_mask_ms of CPU time) counts all of its slices together.
#pragma once

#include "common/error.hpp"
#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/token_constraint.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

class mask_walk {
public:
    /// CPU time its slices have taken so far (of the threads that ran them).
    [[nodiscard]] std::int64_t cpu_ns() const noexcept { return cpu_ns_; }

private:
    friend class compiled_constraint;
    /// A trie node on the walk's path and the next of its edges to take.
    struct frame {
        std::uint32_t node = 0;
        std::uint32_t edge = 0;
    };
    byte_matcher root_;
    std::string key_; ///< the state's mask cache key (empty: an uncached walk)
    token_mask mask_;
    /// pool_[d]: the state one byte below frames_[d], reused for each of its edges; the trie is
    /// max_piece_bytes deep, so neither vector grows after the walk starts.
    std::vector<byte_matcher> pool_;
    std::vector<frame> frames_;
    std::uint64_t work_ = 0;
    std::uint64_t max_work_ = std::numeric_limits<std::uint64_t>::max();
    std::int64_t max_cpu_ns_ = std::numeric_limits<std::int64_t>::max();
    std::int64_t cpu_ns_ = 0;
    /// This slice's ends, in the running thread's CPU clock: the mask's whole budget, and the
    /// slice itself.
    std::int64_t deadline_ns_ = std::numeric_limits<std::int64_t>::max();
    std::int64_t slice_end_ns_ = std::numeric_limits<std::int64_t>::max();
    const cancel_token* cancel_ = nullptr;
    std::uint32_t calls_ = 0;
    bool paused_ = false; ///< the slice ended before the walk did
    std::optional<error> stop_;

    /// Whether the walk must stop here: its budget is spent or it was cancelled (stop_ says
    /// why), or its slice is over (paused_).
    bool spent();
};

} // namespace bitnet::model::constrain
