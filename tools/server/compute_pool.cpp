#include "compute_pool.hpp"

#include "common/cpu_quota.hpp"

#include <string>

namespace bitnet::server {

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
