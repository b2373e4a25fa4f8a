// This machine's own ceilings, measured in the same run as the figures they bound
// (docs/BENCHMARKING.md: compare a figure with what this CPU can do now, not with a number from
// another machine):
//   - int8 multiply-accumulate peak of the best instruction the CPU has: vpdpbusd on zmm or ymm
//     (AVX-512 VNNI), else vpmaddubsw on ymm (AVX2: the instruction bitnet.cpp's x86 kernel uses);
//   - fp32 FMA peak (vfmadd231ps on zmm or ymm);
// each over n_threads threads, with enough independent accumulators to hide latency, so they are
// throughput peaks of the execution units and no kernel can beat them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bitnet::bench {

struct peak {
    std::string instruction; ///< what was timed, e.g. "vpdpbusd zmm"
    double per_s = 0;        ///< int8 MACs/s or fp32 FLOP/s (an FMA is 2 FLOP)
};

/// Every int8 candidate this CPU runs, timed; the best first.
[[nodiscard]] peak int8_mac_peak(int n_threads);
[[nodiscard]] peak fp32_fma_peak(int n_threads);

namespace detail {
/// The register-only loops behind the peaks (ceilings_avx2.cpp, ceilings_avx512.cpp), for
/// bench_kernels, which times them on one thread beside the kernels: `iters` iterations of 12
/// independent vpdpbusd (zmm: 768 MACs an iteration; ymm: 384), or of 8 vpmaddubsw ymm with their
/// adds (1024 MACs), or of 12 FMAs.
std::int64_t vnni_zmm_loop(std::int64_t iters);
std::int64_t vnni_ymm_loop(std::int64_t iters);
std::int64_t maddubs_ymm_loop(std::int64_t iters);
double fma_zmm_loop(std::int64_t iters);
double fma_ymm_loop(std::int64_t iters);

/// bench_kernels' 1.6-bit decode GEMV (ternary5_avx512.cpp): integer dots of the rows of 80-row
/// tiles [tile_begin, tile_end) of weights packed 5 codes a byte, against one token's q.
void gemv5_tiles_avx512(const std::uint8_t* w, std::size_t k, const std::int8_t* q,
                        std::int32_t* dots, std::size_t tile_begin, std::size_t tile_end);
} // namespace detail

/// "model name" of /proc/cpuinfo, and the SIMD flags our kernels care about.
[[nodiscard]] std::string cpu_model();
[[nodiscard]] std::string cpu_simd_flags();

} // namespace bitnet::bench
