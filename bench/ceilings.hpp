// This machine's own ceilings, measured in the same run as the figures they bound (BENCHMARKING.md:
// compare a figure with what this CPU can do now, not with a number from another machine):
//   - int8 multiply-accumulate peak of the best instruction the CPU has: vpdpbusd on zmm or ymm
//     (AVX-512 VNNI), else vpmaddubsw on ymm (AVX2: the instruction bitnet.cpp's x86 kernel uses);
//   - fp32 FMA peak (vfmadd231ps on zmm or ymm);
// each over n_threads threads, with enough independent accumulators to hide latency, so they are
// throughput peaks of the execution units and no kernel can beat them.
#pragma once

#include <string>

namespace bitnet::bench {

struct peak {
    std::string instruction; ///< what was timed, e.g. "vpdpbusd zmm"
    double per_s = 0;        ///< int8 MACs/s or fp32 FLOP/s (an FMA is 2 FLOP)
};

/// Every int8 candidate this CPU runs, timed; the best first.
[[nodiscard]] peak int8_mac_peak(int n_threads);
[[nodiscard]] peak fp32_fma_peak(int n_threads);

/// "model name" of /proc/cpuinfo, and the SIMD flags our kernels care about.
[[nodiscard]] std::string cpu_model();
[[nodiscard]] std::string cpu_simd_flags();

} // namespace bitnet::bench
