// Token masks computed off a step's critical path. A state whose mask is not cached is handed to
// this worker (one thread per executor) before the step's forward pass, so its trie walk runs
// while the pass does; a sequence whose mask is still not ready when the step's own mask budget
// is spent (limits::max_step_mask_ms) is sampled in a later step, and the other sequences of the
// step never wait for it. Jobs for one state (choices of one request, or requests of one schema
// at the same place) are one job. The thread runs at a lower priority than the kernels' threads:
// masks use what the forward pass leaves.
#pragma once

#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/token_constraint.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

namespace bitnet::model::constrain {

class mask_worker {
public:
    using clock = std::chrono::steady_clock;

    /// One state's mask, queued, being computed, or done.
    class job {
    public:
        /// Waits until the mask is done or `deadline` passes; true when done.
        bool wait_until(clock::time_point deadline);
        /// The mask or why there is none (only once done).
        [[nodiscard]] const result<std::shared_ptr<const token_mask>>& mask() const {
            return *result_;
        }
        [[nodiscard]] clock::time_point queued() const noexcept { return queued_; }
        /// When the worker began it (nothing while it waits in the queue).
        [[nodiscard]] std::optional<clock::time_point> started() const;
        [[nodiscard]] const std::string& key() const noexcept { return key_; }

    private:
        friend class mask_worker;
        std::string key_;
        std::shared_ptr<const compiled_constraint> constraint_;
        byte_matcher state_;
        clock::time_point queued_;
        std::optional<clock::time_point> started_; ///< under mu_
        mutable std::mutex mu_;
        std::condition_variable cv_;
        std::optional<result<std::shared_ptr<const token_mask>>> result_;
    };

    mask_worker() = default;
    /// Stops the thread: the job under way ends at its next cancel check.
    ~mask_worker();
    mask_worker(const mask_worker&) = delete;
    mask_worker& operator=(const mask_worker&) = delete;

    /// The job that computes the mask of state `m` under `c` (the one already queued or under way
    /// for the same state, if any). The thread starts with the first job.
    [[nodiscard]] std::shared_ptr<job> submit(std::shared_ptr<const compiled_constraint> c,
                                              const byte_matcher& m);
    /// Ends the job under way and every later one with errc::cancelled (the executor is being
    /// replaced: its schema loops stop at their next check).
    void cancel() noexcept { stop_.cancelled.store(true); }
    /// Jobs submitted and not yet done.
    [[nodiscard]] std::size_t pending() const;

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<job>> queue_;
    std::unordered_map<std::string, std::shared_ptr<job>> in_flight_; ///< by job key
    cancel_token stop_;
    bool stopping_ = false;
    std::thread thread_;

    void run();
};

} // namespace bitnet::model::constrain
