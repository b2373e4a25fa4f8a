// Devices as placements: the preference list a model version may run on, what happens when a
// placement cannot serve it, and how admission ranks replicas on different devices. Plain
// functions of plain values (no actor system), so each rule is unit-tested on its own.
//
// A placement list is the configured `devices` (conf) with "auto" expanded to every CUDA device
// the runtime reports, in index order, and the CPU appended when it is not listed: the CPU is the
// last resort of every list, so a version whose CUDA placement fails (not built, no driver, no
// device, out of memory, format unsupported, or its executor crashed) still serves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::actors {

/// `configured` (each "auto", "cpu", "cuda", "cuda:N" or "sim:N") as concrete placements:
/// "auto" -> cuda:0 .. cuda:(cuda_devices-1), "cuda" -> cuda:0; duplicates dropped (first kept);
/// "cpu" appended when absent. Never empty.
[[nodiscard]] std::vector<std::string> expand_placements(const std::vector<std::string>& configured,
                                                         int cuda_devices);

/// The list one load order runs on: the server's list for "auto" (or nothing named), else the
/// named device and then the CPU.
[[nodiscard]] std::vector<std::string> placements_for(std::string_view requested,
                                                      const std::vector<std::string>& server_list,
                                                      int cuda_devices);

/// Where a version goes after `current` failed: the entry after it in `list`, else the CPU;
/// nothing when `current` is the CPU (a CPU failure is the model's, not the device's).
[[nodiscard]] std::optional<std::string> next_placement(const std::vector<std::string>& list,
                                                        std::string_view current);

/// The metric label of a device failure, from its message: not_built | no_driver | no_device |
/// out_of_memory | format_unsupported | load_failed (anything else). `crashed` and
/// `warmup_failed` are given by the supervisor, which knows when a failure is one.
[[nodiscard]] std::string fallback_reason_class(std::string_view message);

/// A device's speed class for routing: CUDA devices 2, the CPU 1, the simulated grid 0 (it runs
/// the CUDA kernels' bodies as host loops: correct and by far the slowest). An empty or unknown
/// device (a replica from a node that predates devices in replica_view) counts as the CPU.
[[nodiscard]] int device_speed_class(std::string_view device);

/// What routing compares between replicas of one alias.
struct replica_rank {
    std::string device;
    std::uint64_t outstanding_tokens = 0;
};

/// Whether `a` is the better replica: the faster device class first, the less outstanding work
/// second; equal ranks are not better (the caller keeps its first choice, so ties stay stable).
[[nodiscard]] bool ranks_before(const replica_rank& a, const replica_rank& b);

} // namespace bitnet::actors
