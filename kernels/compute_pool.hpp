// The compute threads behind kernels/parallel.hpp: each thread that runs kernels (an executor's
// own thread, a benchmark's main) gets a pool of workers of its own, grown to the widest call.
//
// Why not OpenMP's teams: a parallel region ends only when every thread of the team has arrived
// at its closing barrier, so on a machine whose cores are shared with another busy process the
// thread that lost its core holds back every region (bench/RESULTS.md, "Compute threads": the
// sequential requests beside a busy process). Here work is cut into more chunks than threads and
// a call returns as soon as every chunk is done: a worker that has not woken yet, or lost its core
// before it took a chunk, costs nothing, and the caller computes what the others do not take.
// Idle workers spin for a bounded number of iterations (set_idle_spin), then sleep on a futex.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels {

/// One chunk of a call: fn(ctx, chunk, thread), thread in [0, n_threads) (0 is the caller) and
/// unique among the threads running the call at once, so it may index per-thread scratch.
using chunk_fn = void (*)(void* ctx, std::size_t chunk, int thread);

/// The most chunks one call may have, and the most threads.
inline constexpr std::size_t max_chunks = (std::size_t{1} << 28) - 1;
inline constexpr int max_threads = 255;

/// Runs every chunk in [0, n_chunks) exactly once on up to n_threads threads (the caller and its
/// pool's workers) and returns when all are done; an exception from a chunk is rethrown here once
/// every chunk has finished (the chunks after it are skipped). A call from inside a chunk runs
/// inline on its thread. n_chunks <= max_chunks; n_threads is capped at max_threads.
void run_chunks(std::size_t n_chunks, int n_threads, chunk_fn fn, void* ctx);

/// Iterations an idle worker spins (one load and one pause instruction each, as libgomp's
/// GOMP_SPINCOUNT counts them: about 55 ns on an AMD EPYC) before it sleeps until the next call;
/// 0 = sleep at once. Process-wide, read by each worker whenever it goes idle. The default is
/// 300000 (libgomp's own).
void set_idle_spin(std::uint32_t iterations) noexcept;
[[nodiscard]] std::uint32_t idle_spin() noexcept;

/// CPUs in this process's affinity mask when first asked (at least 1).
[[nodiscard]] int affinity_cpus() noexcept;

} // namespace bitnet::kernels
