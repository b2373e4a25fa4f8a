// Splitting a kernel's independent work items over the compute threads (kernels/compute_pool.hpp).
// Ranges are handed out as a few contiguous chunks per thread, claimed as threads get to them, so
// each thread streams slices of a weight matrix and a thread that lost its core to another process
// takes fewer of them instead of holding back the whole call.
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
        std::size_t n, grain, n_grains, chunks;
    } c{&fn, n, grain, n_grains,
        std::min(n_grains, static_cast<std::size_t>(threads) * range_chunks_per_thread)};
    run_chunks(
        c.chunks, threads,
        [](void* p, std::size_t chunk, int) {
            const auto& x = *static_cast<const call*>(p);
            const std::size_t begin = std::min(x.n, x.n_grains * chunk / x.chunks * x.grain);
            const std::size_t end = std::min(x.n, x.n_grains * (chunk + 1) / x.chunks * x.grain);
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
