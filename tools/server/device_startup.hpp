// The devices at start-up: what the CUDA runtime reports (one log line per device, or why there
// are none), the configured `devices` expanded into the placement list every model version runs
// on (actors/supervisor/device_placements.hpp), and the same for /health.
#pragma once

#include "http/routes/server.hpp"

#include <string>
#include <vector>

namespace bitnet::server {

/// Enumerates the devices, logs them and the placement list made of `configured`.
[[nodiscard]] http::device_inventory start_devices(const std::vector<std::string>& configured);

/// Why a version's first placement is where it is, for its executor's device_reason.
[[nodiscard]] std::string first_placement_reason(const http::device_inventory& inv,
                                                 const std::vector<std::string>& placements,
                                                 const std::string& requested);

} // namespace bitnet::server
