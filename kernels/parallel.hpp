// Splitting a kernel's independent work items over the compute threads (kernels/compute_pool.hpp).
// Ranges are handed out as a few contiguous chunks per thread and then single grains, claimed as
// threads get to them, so each thread streams slices of a weight matrix, a thread that lost its
// core to another process takes fewer of them instead of holding back the whole call, and the
// threads end together.
#pragma once

#include "kernels/compute_pool.hpp"

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace bitnet::kernels {

/// Number of threads to use when the caller asks for `requested` (0 = one per CPU this process
/// may run on).
[[nodiscard]] inline int resolve_threads(int requested) noexcept {
    return requested > 0 ? requested : affinity_cpus();
}

/// Chunks per thread in parallel_ranges: enough that a delayed thread costs a fraction of a call,
/// few enough that claiming (one atomic each) stays invisible beside the chunk's work.
inline constexpr std::size_t range_chunks_per_thread = 4;

/// How parallel_ranges cuts n_grains grains among `threads`: range_chunks_per_thread equal chunks
/// a thread first, then the last grains (2 to 6 a thread) one a chunk, claimed in that order. The
/// threads that finish their share early take the single grains, so with grains of equal cost the
/// last thread ends at most one grain after the first. Equal chunks alone did not: 216 tiles in
/// 64 chunks of 3 and 4 left 16 threads ending 2 tiles apart, a sixth of the region idle.
struct range_chunks {
    std::size_t leading = 0; ///< chunks of `size` grains, first
    std::size_t size = 1;
    std::size_t n_grains = 0;

    [[nodiscard]] std::size_t count() const noexcept {
        return leading + (n_grains - leading * size);
    }
    [[nodiscard]] std::size_t begin(std::size_t chunk) const noexcept {
        return chunk < leading ? chunk * size : leading * size + (chunk - leading);
    }
    [[nodiscard]] std::size_t end(std::size_t chunk) const noexcept {
        return chunk < leading ? (chunk + 1) * size : begin(chunk) + 1;
    }
};

[[nodiscard]] inline range_chunks chunk_ranges(std::size_t n_grains, int threads) noexcept {
    const auto t = static_cast<std::size_t>(std::max(threads, 1));
    const std::size_t leading = t * range_chunks_per_thread, tail = 2 * t;
    if (n_grains <= leading + tail)
        return {0, 1, n_grains};
    return {leading, (n_grains - tail) / leading, n_grains};
}

/// Row-wise work (norms, activation quantization) below this many values runs on the calling
/// thread: waking the others costs more than a decode step's rows.
inline constexpr std::size_t row_parallel_from = std::size_t{1} << 15;

/// Calls fn(begin, end) on disjoint ranges covering [0, n), each a multiple of `grain` except the
/// last, on up to n_threads threads. Runs inline when one thread suffices.
template <class Fn>
void parallel_ranges(std::size_t n, std::size_t grain, int n_threads, Fn&& fn) {
    if (n == 0)
        return;
    grain = std::max<std::size_t>(grain, 1);
    const std::size_t n_grains = (n + grain - 1) / grain;
    const auto threads = static_cast<int>(
        std::min<std::size_t>(n_grains, static_cast<std::size_t>(std::max(n_threads, 1))));
    if (threads <= 1) {
        fn(std::size_t{0}, n);
        return;
    }
    struct call {
        std::remove_reference_t<Fn>* fn;
        std::size_t n, grain;
        range_chunks chunks;
    } c{&fn, n, grain, chunk_ranges(n_grains, threads)};
    run_chunks(
        c.chunks.count(), threads,
        [](void* p, std::size_t chunk, int) {
            const auto& x = *static_cast<const call*>(p);
            const std::size_t begin = std::min(x.n, x.chunks.begin(chunk) * x.grain);
            const std::size_t end = std::min(x.n, x.chunks.end(chunk) * x.grain);
            if (begin < end)
                (*x.fn)(begin, end);
        },
        &c);
}

/// Calls fn(i, thread) for every i in [0, n), handing items out one at a time, for work whose
/// items differ in cost (attention over contexts of different lengths). `thread` < n_threads
/// indexes per-thread scratch.
template <class Fn>
void parallel_items(std::size_t n, int n_threads, Fn&& fn) {
    const auto threads = static_cast<int>(
        std::min<std::size_t>(n, static_cast<std::size_t>(std::max(n_threads, 1))));
    if (threads <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            fn(i, 0);
        return;
    }
    run_chunks(
        n, threads,
        [](void* p, std::size_t i, int thread) {
            (*static_cast<std::remove_reference_t<Fn>*>(p))(i, thread);
        },
        &fn);
}

} // namespace bitnet::kernels
