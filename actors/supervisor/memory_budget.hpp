// The memory budget of the resident model versions, as a plain function (tested without an actor
// system): whether a version's bytes fit beside the others, and which standby versions (rollback
// targets, a cache) give way to make them fit. The supervisor applies the plan.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace bitnet::actors {

/// One other resident version, as the budget sees it.
struct memory_use {
    std::uint64_t serial = 0;
    std::uint64_t bytes = 0;
    bool standby = false; ///< drained rollback target: may be unloaded to make room
    std::string label;    ///< "alias@version" for the refusal message
    std::string state;    ///< its lifecycle state, for the refusal message
};

/// Empty `refusal` = fits once every version in `evict` (in that order) is unloaded.
struct room_plan {
    std::string refusal;
    std::vector<std::uint64_t> evict;
};

/// `need` more bytes (`what` says of what, for the message) against `budget_bytes` (0 = no
/// limit), with `others` resident in serial order. Standby versions are evicted oldest first,
/// and only as many as needed; when even evicting all of them would not do, nothing is evicted
/// and the refusal names the budget, the need and who uses the memory.
[[nodiscard]] room_plan plan_room(std::uint64_t budget_bytes, std::span<const memory_use> others,
                                  std::uint64_t need, const std::string& what);

/// Bytes as whole MiB, rounded to nearest ("12 MiB").
[[nodiscard]] std::string mib(std::uint64_t bytes);

} // namespace bitnet::actors
