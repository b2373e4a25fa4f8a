// Token masks computed off a step's critical path. A state whose mask is not cached is handed to
// this worker (one thread per executor) before the step's forward pass, so its trie walk runs
// while the pass does; a sequence whose mask is still not ready when the step's own mask budget
// is spent (limits::max_step_mask_ms) is sampled in a later step, and the other sequences of the
// step never wait for it. Jobs for one state (choices of one request, or requests of one schema
// at the same place) are one job. The thread runs at a lower priority than the kernels' threads:
// masks use what the forward pass leaves.
//
// Tenants (API keys) share the thread in turns of slice_ns of CPU time: each has its own queue,
// first come first served within it, and the tenants with work queued take turns, each running
// its first job for one slice (a mask's trie walk stops where it is and goes on in its tenant's
// next turn: mask_walk.hpp). A tenant with many heavy masks queued delays another tenant's mask
// by one slice per tenant ahead of it, not by its masks' whole time: its heavy masks delay its
// own sequences. The worker holds its jobs weakly: a job every sequence has let go of (its
// request ended, was cancelled or failed) is dropped at its next turn, unrun.
#pragma once

#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/mask_walk.hpp"
#include "model/constrain/token_constraint.hpp"

#include <atomic>
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
#include <vector>

namespace bitnet::model::constrain {

class mask_worker {
public:
    using clock = std::chrono::steady_clock;

    /// One tenant's turn on the thread, CPU time: a step's own mask wait
    /// (limits::max_step_mask_ms), so a light mask behind one heavy tenant is still ready within
    /// about one step.
    static constexpr std::int64_t slice_ns = limits::max_step_mask_ms * 1'000'000;

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
        /// Since when the slice under way has been running (nothing while the job waits for
        /// its first slice or between two): a slice that runs on far past slice_ns is stuck.
        [[nodiscard]] std::optional<clock::time_point> running_since() const;
        /// When it was done (nothing before).
        [[nodiscard]] std::optional<clock::time_point> done_at() const;
        /// CPU time its trie walk has taken so far, in all its slices (0 for a mask the cache
        /// had): what the sequences waiting on it are charged.
        [[nodiscard]] std::int64_t cpu_ns() const noexcept { return cpu_ns_.load(); }
        [[nodiscard]] const std::string& key() const noexcept { return key_; }

    private:
        friend class mask_worker;
        std::string key_;
        std::shared_ptr<const compiled_constraint> constraint_;
        byte_matcher state_;
        clock::time_point queued_;
        std::vector<std::string> tenants_; ///< whose queues it stands in (under the worker's mu_)
        std::unique_ptr<mask_walk> walk_;  ///< the walk so far (the worker's thread only)
        std::atomic<std::int64_t> cpu_ns_{0};
        std::optional<clock::time_point> running_since_; ///< under mu_
        std::optional<clock::time_point> done_at_;       ///< under mu_
        mutable std::mutex mu_;
        std::condition_variable cv_;
        std::optional<result<std::shared_ptr<const token_mask>>> result_;
    };

    /// `max_mask_ms`: CPU time one mask may take in all its slices (limits::max_mask_ms; tests
    /// that need heavy masks to finish under the sanitizers on a slow machine give more).
    explicit mask_worker(std::int64_t max_mask_ms = limits::max_mask_ms) noexcept
        : max_mask_ms_(max_mask_ms) {}
    /// Stops the thread: the job under way ends at its next cancel check.
    ~mask_worker();
    mask_worker(const mask_worker&) = delete;
    mask_worker& operator=(const mask_worker&) = delete;

    /// The job that computes the mask of state `m` under `c` for `tenant` (the one already
    /// queued or under way for the same state, if any: it then also stands in `tenant`'s queue,
    /// and runs in whichever tenant's turn comes first). The thread starts with the first job.
    [[nodiscard]] std::shared_ptr<job> submit(std::shared_ptr<const compiled_constraint> c,
                                              const byte_matcher& m, const std::string& tenant);
    /// Ends the job under way and every later one with errc::cancelled (the executor is being
    /// replaced: its schema loops stop at their next check).
    void cancel() noexcept { stop_.cancelled.store(true); }
    /// Jobs submitted and not yet done (nor dropped).
    [[nodiscard]] std::size_t pending() const;

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    /// A job in a tenant's queue, and its key (to find it in flight once it is gone).
    struct entry {
        std::weak_ptr<job> j;
        std::string key;
    };
    /// Each tenant's jobs in the order they came (a tenant is here while it has jobs).
    std::unordered_map<std::string, std::deque<entry>> queues_;
    /// Tenants with jobs queued, in the order of their next turns; the tenant whose turn is under
    /// way is not in it (it goes to the back when its turn ends, if it still has work).
    std::deque<std::string> turns_;
    std::unordered_map<std::string, std::weak_ptr<job>> in_flight_; ///< by job key
    cancel_token stop_;
    std::int64_t max_mask_ms_;
    bool stopping_ = false;
    std::thread thread_;

    void run();
    /// Puts `j` in `tenant`'s queue, and `tenant` in line for a turn when it was not (mu_ held).
    void enqueue(const std::shared_ptr<job>& j, const std::string& tenant);
    /// One slice of `j`'s walk (mu_ not held); true when the job is done.
    bool run_slice(job& j);
    /// The first job of `tenant`'s queue that someone still waits for (null when none): the
    /// ones let go of are dropped on the way (mu_ held).
    std::shared_ptr<job> first_wanted(const std::string& tenant);
    /// Done job `j` out of the jobs in flight and every queue it stood in; a tenant other than
    /// `serving` left with nothing leaves the line (mu_ held).
    void forget(const std::shared_ptr<job>& j, const std::string& serving);
    /// Once `serving`'s turn is over: to the back of the line while it has work (mu_ held).
    void end_turn(const std::string& serving);
};

} // namespace bitnet::model::constrain
