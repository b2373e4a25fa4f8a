// How many CPUs this process may really use: the CPUs in its affinity mask, capped by its
// cgroup's CPU quota (a container limited to 1.5 CPUs on a 64-core host gets 2, not 64). The
// compute pool's default size (n_threads 0) is this: more threads than the quota allows only
// take turns being throttled, and steal the time the control plane needs.
#pragma once

#include <optional>
#include <string_view>

namespace bitnet {

/// CPUs a cgroup v2 `cpu.max` ("QUOTA PERIOD" or "max PERIOD") allows, rounded up; nullopt when
/// it sets no limit or cannot be read.
[[nodiscard]] std::optional<int> cpus_of_cpu_max(std::string_view text);
/// The same for cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us (quota -1: no limit).
[[nodiscard]] std::optional<int> cpus_of_cfs(std::string_view quota_us, std::string_view period_us);

struct cpu_budget {
    int affinity = 1;         ///< CPUs in the affinity mask
    std::optional<int> quota; ///< CPUs the cgroup's quota allows, when it sets one
    [[nodiscard]] int usable() const noexcept {
        return quota && *quota < affinity ? *quota : affinity;
    }
};

/// Reads the affinity mask and the cgroup quota (v2, then v1) of this process.
[[nodiscard]] cpu_budget read_cpu_budget();

} // namespace bitnet
