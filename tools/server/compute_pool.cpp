#include "compute_pool.hpp"

#include "common/cpu_quota.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

namespace bitnet::server {

void exec_with_compute_wait(char** argv, std::uint32_t spin_count) {
    const std::string want = std::to_string(spin_count);
    // Executed again already (the marker, not the variables themselves, ends the loop: a user
    // may have set GOMP_SPINCOUNT to the same value without the policy being unset).
    if (const char* done = std::getenv("BITNET_COMPUTE_WAIT_SET"); done && want == done)
        return;
    // GOMP_SPINCOUNT alone: OMP_WAIT_POLICY would override it (passive = 0, active = forever).
    ::unsetenv("OMP_WAIT_POLICY");
    ::setenv("GOMP_SPINCOUNT", want.c_str(), 1);
    ::setenv("BITNET_COMPUTE_WAIT_SET", want.c_str(), 1);
    ::execv("/proc/self/exe", argv);
    std::fprintf(stderr,
                 "bitnet-server: could not re-execute itself to set the compute pool's wait "
                 "(%s); going on with OpenMP's defaults\n",
                 std::strerror(errno));
}

int compute_threads(std::uint32_t requested, std::string* why) {
    if (requested > 0) {
        if (why)
            *why = "n_threads";
        return static_cast<int>(requested);
    }
    const auto b = read_cpu_budget();
    if (why)
        *why = "the CPUs this process may use: " + std::to_string(b.affinity) +
               " in its affinity mask" +
               (b.quota ? ", cgroup quota " + std::to_string(*b.quota)
                        : std::string(", no cgroup quota"));
    return b.usable();
}

} // namespace bitnet::server
