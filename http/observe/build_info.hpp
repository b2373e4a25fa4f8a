// What the server says about its build and its devices (/health, bitnet_build_info): plain values
// that the start-up fills in and the responses render (api_render.hpp's health_body).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::http {

struct cuda_device {
    int index = 0;
    std::string name;
    int sm = 0; ///< compute capability, major * 10 + minor
    std::uint64_t total_bytes = 0;
};

/// The devices this process found at start-up and the placement list it made of them, for
/// /health (filled by the executable from the CUDA runtime's enumeration).
struct device_inventory {
    bool cuda_built = false;
    int cuda_driver_version = 0; ///< 0: no driver
    int cuda_runtime_version = 0;
    std::string cuda_error; ///< why there are no CUDA devices, in the runtime's words
    std::vector<cuda_device> cuda_devices;
    std::vector<std::string> placements; ///< the expanded devices list, the CPU last
};

/// What /health reports about the binary (filled by the executable, which knows its build).
struct build_info {
    std::string version = "0.1.0";
    std::string git_sha = "unknown";
    std::string compiler;
    std::string flags;
    std::string cpu_features;
    device_inventory devices;
};

} // namespace bitnet::http
