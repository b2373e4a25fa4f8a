// The memory budget without an actor system: when a version fits, which rollback targets give
// way, and the refusal when nothing can make room.
#include "actors/supervisor/memory_budget.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace {

using namespace bitnet::actors;

constexpr std::uint64_t MiB = 1 << 20;

memory_use use(std::uint64_t serial, std::uint64_t mib_, bool standby, const char* label) {
    return {serial, mib_ * MiB, standby, label, standby ? "standby" : "ready"};
}

} // namespace

TEST_CASE("memory budget: no budget, or room enough, evicts nothing") {
    const std::vector<memory_use> others{use(1, 500, true, "a@1"), use(2, 400, false, "b@1")};
    auto plan = plan_room(0, others, 10000 * MiB, "x");
    CHECK(plan.refusal.empty());
    CHECK(plan.evict.empty());
    plan = plan_room(1000 * MiB, others, 100 * MiB, "x");
    CHECK(plan.refusal.empty());
    CHECK(plan.evict.empty());
}

TEST_CASE("memory budget: standby versions give way, oldest first, only as many as needed") {
    const std::vector<memory_use> others{use(1, 300, true, "a@1"), use(2, 300, true, "a@2"),
                                         use(3, 300, false, "b@1")};
    // 900 used of 1000: 350 more needs one 300 MiB standby out; the oldest goes.
    auto plan = plan_room(1000 * MiB, others, 350 * MiB, "x");
    CHECK(plan.refusal.empty());
    CHECK(plan.evict == std::vector<std::uint64_t>{1});
    // 650 more needs both.
    plan = plan_room(1000 * MiB, others, 650 * MiB, "x");
    CHECK(plan.refusal.empty());
    CHECK(plan.evict == std::vector<std::uint64_t>{1, 2});
}

TEST_CASE("memory budget: when even every standby out would not do, nothing is evicted") {
    const std::vector<memory_use> others{use(1, 300, true, "a@1"), use(3, 500, false, "b@1")};
    const auto plan = plan_room(1000 * MiB, others, 600 * MiB, "weights 550 MiB + KV 50 MiB");
    CHECK(plan.evict.empty());
    REQUIRE_FALSE(plan.refusal.empty());
    CHECK(plan.refusal.find("needs 600 MiB (weights 550 MiB + KV 50 MiB)") != std::string::npos);
    CHECK(plan.refusal.find("the budget is 1000 MiB and 800 MiB are in use") != std::string::npos);
    CHECK(plan.refusal.find("a@1 300 MiB (standby), b@1 500 MiB (ready)") != std::string::npos);
    CHECK(plan.refusal.find("memory_budget_bytes") != std::string::npos);
}

TEST_CASE("memory budget: MiB are rounded to nearest") {
    CHECK(mib(0) == "0 MiB");
    CHECK(mib(MiB / 2 - 1) == "0 MiB");
    CHECK(mib(MiB / 2) == "1 MiB");
    CHECK(mib(3 * MiB) == "3 MiB");
}
