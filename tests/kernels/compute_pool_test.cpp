// The compute pool (kernels/compute_pool.hpp) and the splitting on top of it
// (kernels/parallel.hpp): every item exactly once, per-thread indices never shared at once, a
// slow thread takes fewer chunks instead of holding the call back, sleeping workers wake, an
// exception comes back to the caller, nested and concurrent callers.
#include "kernels/compute_pool.hpp"

#include "kernels/parallel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace bitnet;

namespace {

/// Restores the process-wide idle spin when a test that changes it ends.
struct spin_guard {
    std::uint32_t saved = kernels::idle_spin();
    ~spin_guard() { kernels::set_idle_spin(saved); }
};

/// parallel_ranges over n with `grain` on `threads`: every index covered once, ranges whole
/// grains except the last.
void check_ranges(std::size_t n, std::size_t grain, int threads) {
    std::vector<std::atomic<int>> seen(n);
    std::atomic<bool> aligned{true};
    kernels::parallel_ranges(n, grain, threads, [&](std::size_t begin, std::size_t end) {
        if (begin % grain != 0 || (end != n && end % grain != 0) || begin >= end)
            aligned = false;
        for (std::size_t i = begin; i < end; ++i)
            seen[i].fetch_add(1);
    });
    CHECK(aligned.load());
    std::size_t wrong = 0;
    for (auto& s : seen)
        wrong += s.load() != 1;
    CHECK_MESSAGE(wrong == 0, ("n " + std::to_string(n) + ", grain " + std::to_string(grain) +
                               ", threads " + std::to_string(threads)));
}

} // namespace

TEST_CASE("compute pool: parallel_ranges covers every index once in whole grains, on random "
          "ragged shapes and thread counts") {
    std::mt19937 rng(7);
    for (int round = 0; round < 300; ++round) {
        const std::size_t n = 1 + rng() % 5000;
        const std::size_t grain = 1 + rng() % 70;
        const int threads = 1 + static_cast<int>(rng() % 6);
        check_ranges(n, grain, threads);
    }
    check_ranges(1, 64, 4);
    check_ranges(64 * 3 + 1, 64, 8); // fewer grains than threads * chunks
}

TEST_CASE("compute pool: parallel_ranges' chunks end every thread within one grain of the others "
          "when grains cost the same") {
    // Chunks claimed in order, each by the thread that is free first (equal grains, no delays):
    // the busiest thread does ceil(n / threads) grains. Equal chunks alone did not (216 grains in
    // 64 chunks of 3 and 4 gave 15 to some of 16 threads, 13.5 on average).
    std::mt19937 rng(11);
    for (int round = 0; round < 400; ++round) {
        const std::size_t n = round == 0 ? 216 : 1 + rng() % 3000;
        const int threads = round == 0 ? 16 : 1 + static_cast<int>(rng() % 24);
        CAPTURE(n);
        CAPTURE(threads);
        const auto rc = kernels::chunk_ranges(n, threads);
        std::vector<std::size_t> busy(static_cast<std::size_t>(threads), 0);
        std::size_t next = 0;
        for (std::size_t c = 0; c < rc.count(); ++c) {
            REQUIRE(rc.begin(c) == next); // in order, no gap, no overlap
            REQUIRE(rc.end(c) > rc.begin(c));
            next = rc.end(c);
            *std::min_element(busy.begin(), busy.end()) += rc.end(c) - rc.begin(c);
        }
        CHECK(next == n);
        const auto t = static_cast<std::size_t>(threads);
        CHECK(*std::max_element(busy.begin(), busy.end()) == (n + t - 1) / t);
        CHECK(rc.count() <= 10 * t + 1); // a few claims a thread, whatever n
    }
}

TEST_CASE("compute pool: parallel_items hands out every item once, and a thread index is never "
          "used by two threads at once") {
    const int threads = 4;
    const std::size_t n = 2000;
    std::vector<std::atomic<int>> seen(n);
    std::vector<std::atomic<int>> busy(threads);
    std::atomic<int> bad_index{0}, shared{0};
    kernels::parallel_items(n, threads, [&](std::size_t i, int thread) {
        if (thread < 0 || thread >= threads) {
            ++bad_index;
            return;
        }
        if (busy[static_cast<std::size_t>(thread)].exchange(1) != 0)
            ++shared;
        seen[i].fetch_add(1);
        volatile int spin = 0;
        for (int k = 0; k < 200; ++k)
            spin = spin + 1;
        busy[static_cast<std::size_t>(thread)].store(0);
    });
    CHECK(bad_index.load() == 0);
    CHECK(shared.load() == 0);
    std::size_t wrong = 0;
    for (auto& s : seen)
        wrong += s.load() != 1;
    CHECK(wrong == 0);
}

TEST_CASE("compute pool: a thread held up in one chunk takes fewer, the others take the rest") {
    // Static halves would give each of 2 threads 32 of the 64 chunks; here the worker is held
    // for 200 ms in the first chunk it takes and the caller computes the rest.
    struct counts {
        std::atomic<int> by_caller{0}, by_worker{0};
        std::atomic<bool> held{false};
    } c;
    kernels::run_chunks(
        64, 2,
        [](void* p, std::size_t, int thread) {
            auto& x = *static_cast<counts*>(p);
            if (thread == 0) {
                ++x.by_caller;
                return;
            }
            ++x.by_worker;
            if (!x.held.exchange(true))
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
        },
        &c);
    CHECK(c.by_caller.load() + c.by_worker.load() == 64);
    CHECK(c.by_worker.load() < 16); // it may take a few before its held chunk; never a half
    CHECK(c.by_caller.load() > 48);
}

TEST_CASE("compute pool: workers that sleep at once between calls still wake for each call") {
    spin_guard guard;
    kernels::set_idle_spin(0);
    for (int call = 0; call < 200; ++call) {
        std::atomic<std::size_t> sum{0};
        kernels::parallel_items(37, 3, [&](std::size_t i, int) { sum.fetch_add(i + 1); });
        REQUIRE(sum.load() == 37 * 38 / 2);
        if (call % 50 == 0) // let the workers fall asleep
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

TEST_CASE("compute pool: an exception from a chunk reaches the caller after the call, and the "
          "pool serves the next call") {
    std::atomic<int> ran{0};
    CHECK_THROWS_AS(kernels::parallel_items(100, 3,
                                            [&](std::size_t i, int) {
                                                ++ran;
                                                if (i == 41)
                                                    throw std::runtime_error("chunk 41");
                                            }),
                    std::runtime_error);
    CHECK(ran.load() >= 1);
    CHECK(ran.load() <= 100);
    std::atomic<int> after{0};
    kernels::parallel_items(100, 3, [&](std::size_t, int) { ++after; });
    CHECK(after.load() == 100);
}

TEST_CASE("compute pool: a call from inside a chunk runs inline, and callers on two threads each "
          "have their own workers") {
    std::atomic<int> inner{0};
    kernels::parallel_items(8, 2, [&](std::size_t, int) {
        kernels::parallel_ranges(
            100, 1, 4, [&](std::size_t b, std::size_t e) { inner += static_cast<int>(e - b); });
    });
    CHECK(inner.load() == 800);

    std::atomic<long> total{0};
    auto caller = [&] {
        for (int call = 0; call < 300; ++call)
            kernels::parallel_ranges(1000, 8, 3, [&](std::size_t b, std::size_t e) {
                total += static_cast<long>(e - b);
            });
    };
    std::thread a(caller), b(caller);
    a.join();
    b.join();
    CHECK(total.load() == 2L * 300 * 1000);
}
