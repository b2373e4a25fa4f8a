// Splitting a kernel's independent work items over threads (OpenMP). Items are handed out as
// contiguous ranges, one per thread, so each thread streams its own slice of a weight matrix.
#pragma once

#include <algorithm>
#include <cstddef>

#include <omp.h>

namespace bitnet::kernels {

/// Number of threads to use when the caller asks for `requested` (0 = one per core).
[[nodiscard]] inline int resolve_threads(int requested) noexcept {
    return requested > 0 ? requested : std::max(1, omp_get_num_procs());
}

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
#pragma omp parallel num_threads(threads)
    {
        const auto t = static_cast<std::size_t>(omp_get_thread_num());
        const auto nt = static_cast<std::size_t>(omp_get_num_threads());
        const std::size_t g0 = n_grains * t / nt;
        const std::size_t g1 = n_grains * (t + 1) / nt;
        const std::size_t begin = std::min(n, g0 * grain);
        const std::size_t end = std::min(n, g1 * grain);
        if (begin < end)
            fn(begin, end);
    }
}

} // namespace bitnet::kernels

namespace bitnet::kernels {

/// Calls fn(i, thread) for every i in [0, n), handing items out dynamically, for work whose items
/// differ in cost (attention over contexts of different lengths). `thread` < n_threads indexes
/// per-thread scratch.
template <class Fn>
void parallel_items(std::size_t n, int n_threads, Fn&& fn) {
    const auto threads = static_cast<int>(
        std::min<std::size_t>(n, static_cast<std::size_t>(std::max(n_threads, 1))));
    if (threads <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            fn(i, 0);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::size_t i = 0; i < n; ++i)
        fn(i, omp_get_thread_num());
}

} // namespace bitnet::kernels
