#include "actors/supervisor/memory_budget.hpp"

namespace bitnet::actors {

std::string mib(std::uint64_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

room_plan plan_room(std::uint64_t budget_bytes, std::span<const memory_use> others,
                    std::uint64_t need, const std::string& what) {
    room_plan plan;
    if (budget_bytes == 0)
        return plan;
    std::uint64_t used = 0, standby = 0;
    std::string users;
    for (const auto& o : others) {
        used += o.bytes;
        if (o.standby)
            standby += o.bytes;
        if (o.bytes > 0)
            users +=
                (users.empty() ? "" : ", ") + o.label + " " + mib(o.bytes) + " (" + o.state + ")";
    }
    if (used + need <= budget_bytes)
        return plan;
    if (used - standby + need > budget_bytes) {
        plan.refusal = "memory budget exceeded: this version needs " + mib(need) + " (" + what +
                       "); the budget is " + mib(budget_bytes) + " and " + mib(used) +
                       " are in use by " + users +
                       ". Unload a model (DELETE /v1/models/{alias}) or raise memory_budget_bytes";
        return plan;
    }
    // Rollback targets are a cache: they give way to a version that is asked for.
    for (const auto& o : others) {
        if (used + need <= budget_bytes)
            break;
        if (o.standby) {
            used -= o.bytes;
            plan.evict.push_back(o.serial);
        }
    }
    return plan;
}

} // namespace bitnet::actors
