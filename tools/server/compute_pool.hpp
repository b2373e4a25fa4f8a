// The compute pool's manners (conf/README.md, compute_spin_count and n_threads): how many threads
// it has and what its idle threads do. OpenMP's threads spin-wait for the next parallel region
// (libgomp: 300,000 iterations, ~15 ms here) before they sleep; on a machine whose cores are
// all busy that spinning competes with the control plane (the HTTP threads, CAF's scheduler, the
// cluster's heartbeats) and with the other processes. The server sets the wait itself, from its
// configuration, whatever the user's environment says; bench/RESULTS.md ("Compute threads") has
// what each setting costs on a quiet and on a shared machine.
#pragma once

#include <cstdint>
#include <string>

namespace bitnet::server {

/// libgomp reads GOMP_SPINCOUNT and OMP_WAIT_POLICY once, when it is loaded, before main: so
/// the server executes itself again, once, with them set for `spin_count` (0: sleep at once).
/// Returns when the environment already is so, or when re-executing failed (after a warning on
/// stderr; the pool then keeps libgomp's defaults).
void exec_with_compute_wait(char** argv, std::uint32_t spin_count);

/// What the process's compute threads are: `requested` (n_threads), or 0 for the CPUs it may
/// use (affinity mask, capped by its cgroup's quota: common/cpu_quota.hpp). `why` says which.
[[nodiscard]] int compute_threads(std::uint32_t requested, std::string* why);

} // namespace bitnet::server
