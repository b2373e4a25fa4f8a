// The compute pool's manners (conf/README.md, compute_spin_count and n_threads): how many threads
// it has and what its idle threads do (kernels/compute_pool.hpp): they spin-wait for the next call
// (300,000 iterations by default) before they sleep; on a machine whose cores are all busy that
// spinning competes with the control plane (the HTTP threads, CAF's scheduler, the cluster's
// heartbeats) and with the other processes. bench/RESULTS.md ("Compute threads") has what each
// setting costs on a quiet and on a shared machine.
#pragma once

#include <cstdint>
#include <string>

namespace bitnet::server {

/// What the process's compute threads are: `requested` (n_threads), or 0 for the CPUs it may
/// use (affinity mask, capped by its cgroup's quota: common/cpu_quota.hpp). `why` says which.
[[nodiscard]] int compute_threads(std::uint32_t requested, std::string* why);

} // namespace bitnet::server
