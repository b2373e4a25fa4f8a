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

/// The compute pool the start-up sized (/health "compute"): its threads, whether n_threads
/// gave them or the CPUs this process may use ("cpus"), and an idle thread's spin count.
struct compute_settings {
    std::uint32_t threads = 0;
    std::string threads_from = "n_threads"; ///< n_threads | cpus
    std::uint32_t spin_count = 0;
};

/// What /health reports about the binary (filled by the executable, which knows its build).
struct build_info {
    std::string version = "0.1.0";
    std::string git_sha = "unknown";
    std::string compiler;
    std::string flags;
    std::string cpu_features;
    bool test_hooks = false; ///< built with the test hooks (BITNET_TEST_HOOKS)
    device_inventory devices;
    compute_settings compute;
};

} // namespace bitnet::http
