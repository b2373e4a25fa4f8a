#include "kernels/compute_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace bitnet::kernels {

namespace {

std::atomic<std::uint32_t> g_idle_spin{300000};

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

/// One call: lives on the caller's stack until every chunk is done. A line of its own, so the
/// workers' counting does not take the caller's neighbouring stack slots from its cache.
struct alignas(64) job {
    chunk_fn fn = nullptr;
    void* ctx = nullptr;
    std::atomic<std::size_t> done{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error; ///< written once, by whoever set `failed`
};

/// The call's claim word: threads allowed (8 bits), chunks (28), next unclaimed chunk (28). A
/// claim is one compare-exchange on the whole word, so a worker never takes a chunk of a call it
/// may not join, or one past the end; and a claim that succeeds takes a chunk of the call
/// published now, whichever call its expectation was read in (the word alone says what is left).
constexpr unsigned field_bits = 28;
constexpr std::uint64_t field_mask = (std::uint64_t{1} << field_bits) - 1;

constexpr std::uint64_t pack(std::uint64_t threads, std::uint64_t n, std::uint64_t next) {
    return threads << (2 * field_bits) | n << field_bits | next;
}

/// Whether thread `self` may take chunk `next` of the call the word describes.
constexpr bool open_to(std::uint64_t word, int self) {
    const auto threads = static_cast<int>(word >> (2 * field_bits));
    return self < threads && (word & field_mask) < ((word >> field_bits) & field_mask);
}

/// The thread a worker is (1..), 0 on any other thread; and whether it is inside a chunk.
thread_local int t_worker_index = 0;
thread_local int t_chunk_depth = 0;

void execute(job& j, std::size_t chunk, int thread) noexcept {
    if (!j.failed.load(std::memory_order_relaxed)) {
        ++t_chunk_depth;
        try {
            j.fn(j.ctx, chunk, thread);
        } catch (...) {
            bool expected = false;
            if (j.failed.compare_exchange_strong(expected, true))
                j.error = std::current_exception();
        }
        --t_chunk_depth;
    }
    // The last touch of the job: the caller may return as soon as it sees the count complete.
    j.done.fetch_add(1, std::memory_order_release);
}

class pool {
public:
    pool() = default;
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;

    ~pool() {
        stop_.store(true);
        for (auto& w : workers_) {
            w->seq.fetch_add(1);
            w->seq.notify_one();
        }
        for (auto& w : workers_)
            w->thread.join();
    }

    void run(std::size_t n, int threads, chunk_fn fn, void* ctx) {
        grow(threads - 1);
        job j;
        j.fn = fn;
        j.ctx = ctx;
        job_.store(&j, std::memory_order_relaxed);
        // Publishing is a seq_cst store and the sleeping check a seq_cst load, the mirror of a
        // worker's (sleeping = true, then a look at the claim word): one of the two sees the other.
        state_.store(pack(static_cast<std::uint64_t>(threads), n, 0));
        for (int w = 1; w < threads; ++w) {
            auto& slot = *workers_[static_cast<std::size_t>(w - 1)];
            if (slot.sleeping.load()) {
                slot.seq.fetch_add(1);
                slot.seq.notify_one();
            }
        }
        std::size_t chunk = 0;
        while (claim(0, chunk))
            execute(j, chunk, 0);
        // Only chunks that workers are computing remain; one that lost its core mid-chunk is
        // waited for, yielding so that on a shared core it may finish.
        for (std::uint32_t spins = 0; j.done.load(std::memory_order_acquire) < n; ++spins) {
            if (spins < 4096)
                cpu_relax();
            else
                std::this_thread::yield();
        }
        if (j.failed.load(std::memory_order_relaxed))
            std::rethrow_exception(j.error);
    }

private:
    struct alignas(64) worker {
        std::atomic<std::uint32_t> seq{0}; ///< bumped to wake it
        std::atomic<bool> sleeping{false};
        std::thread thread;
    };

    /// Takes the next chunk if thread `self` may join the published call and one is left.
    bool claim(int self, std::size_t& chunk) noexcept {
        auto s = state_.load(std::memory_order_relaxed);
        for (;;) {
            if (!open_to(s, self))
                return false;
            // Acquire: the claim word's release sequence starts at the caller's store, which
            // came after it set job_.
            if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
                chunk = static_cast<std::size_t>(s & field_mask);
                return true;
            }
        }
    }

    [[nodiscard]] bool claimable(int self) const noexcept { return open_to(state_.load(), self); }

    void grow(int wanted) {
        while (static_cast<int>(workers_.size()) < wanted) {
            workers_.push_back(std::make_unique<worker>());
            const int index = static_cast<int>(workers_.size());
            worker* w = workers_.back().get();
            w->thread = std::thread([this, w, index] { work(*w, index); });
        }
    }

    void work(worker& self, int index) {
        t_worker_index = index;
        std::uint32_t spins = 0;
        for (;;) {
            std::size_t chunk = 0;
            if (claim(index, chunk)) {
                // The call cannot end, nor job_ change, before this chunk is counted done.
                execute(*job_.load(std::memory_order_relaxed), chunk, index);
                spins = 0;
                continue;
            }
            if (stop_.load(std::memory_order_relaxed))
                return;
            if (spins < g_idle_spin.load(std::memory_order_relaxed)) {
                ++spins;
                cpu_relax();
                continue;
            }
            const auto seq = self.seq.load();
            self.sleeping.store(true);
            if (!claimable(index) && !stop_.load())
                self.seq.wait(seq);
            self.sleeping.store(false);
            spins = 0;
        }
    }

    std::atomic<std::uint64_t> state_{0};
    std::atomic<job*> job_{nullptr};
    std::atomic<bool> stop_{false};
    std::vector<std::unique_ptr<worker>> workers_; ///< touched by the owning thread only
};

} // namespace

void run_chunks(std::size_t n_chunks, int n_threads, chunk_fn fn, void* ctx) {
    const int threads = std::clamp(n_threads, 1, max_threads);
    if (n_chunks == 0)
        return;
    // Inline: one thread, one chunk, or a call from inside a chunk (a worker's, or the
    // caller's own while its pool is busy).
    if (threads == 1 || n_chunks == 1 || t_chunk_depth > 0 || t_worker_index > 0) {
        for (std::size_t c = 0; c < n_chunks; ++c)
            fn(ctx, c, t_worker_index);
        return;
    }
    if (n_chunks > max_chunks) { // more than the claim word holds: calls of max_chunks each
        struct slice {
            chunk_fn fn;
            void* ctx;
            std::size_t base;
        } s{fn, ctx, 0};
        const chunk_fn shifted = [](void* p, std::size_t c, int thread) {
            const auto& x = *static_cast<const slice*>(p);
            x.fn(x.ctx, x.base + c, thread);
        };
        for (; s.base < n_chunks; s.base += max_chunks)
            run_chunks(std::min(max_chunks, n_chunks - s.base), threads, shifted, &s);
        return;
    }
    thread_local std::unique_ptr<pool> own;
    if (!own)
        own = std::make_unique<pool>();
    own->run(n_chunks, threads, fn, ctx);
}

void set_idle_spin(std::uint32_t iterations) noexcept {
    g_idle_spin.store(iterations, std::memory_order_relaxed);
}

std::uint32_t idle_spin() noexcept {
    return g_idle_spin.load(std::memory_order_relaxed);
}

int affinity_cpus() noexcept {
    // Read once, as libgomp reads its count when it loads: kernels ask on every call.
    static const int cpus = [] {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (::sched_getaffinity(0, sizeof(set), &set) != 0)
            return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        return std::max(1, CPU_COUNT(&set));
    }();
    return cpus;
}

} // namespace bitnet::kernels
