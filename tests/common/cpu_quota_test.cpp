// The compute pool's default size (common/cpu_quota.hpp): cgroup quotas read as CPUs, rounded up.
#include "common/cpu_quota.hpp"

#include <doctest/doctest.h>

namespace bitnet {

TEST_CASE("cgroup CPU quotas: v2 cpu.max and v1 cfs files as whole CPUs, rounded up") {
    CHECK(cpus_of_cpu_max("max 100000\n") == std::nullopt);
    CHECK(cpus_of_cpu_max("100000 100000\n") == 1);
    CHECK(cpus_of_cpu_max("150000 100000") == 2);
    CHECK(cpus_of_cpu_max("50000 100000") == 1);
    CHECK(cpus_of_cpu_max("400000 100000") == 4);
    CHECK(cpus_of_cpu_max("") == std::nullopt);
    CHECK(cpus_of_cpu_max("garbage") == std::nullopt);
    CHECK(cpus_of_cpu_max("0 100000") == std::nullopt);
    CHECK(cpus_of_cfs("-1\n", "100000\n") == std::nullopt);
    CHECK(cpus_of_cfs("250000\n", "100000\n") == 3);
    CHECK(cpus_of_cfs("", "100000") == std::nullopt);
    cpu_budget b{8, 2};
    CHECK(b.usable() == 2);
    b.quota = 16;
    CHECK(b.usable() == 8);
    b.quota.reset();
    CHECK(b.usable() == 8);
}

TEST_CASE("the process's CPU budget: at least one CPU, never more than the affinity mask") {
    const auto b = read_cpu_budget();
    CHECK(b.affinity >= 1);
    CHECK(b.usable() >= 1);
    CHECK(b.usable() <= b.affinity);
}

} // namespace bitnet
