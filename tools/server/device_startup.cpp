#include "device_startup.hpp"

#include "actors/supervisor/device_placements.hpp"
#include "kernels/cuda/ops.hpp"

#include <spdlog/spdlog.h>

namespace bitnet::server {
namespace {

std::string joined(const std::vector<std::string>& xs) {
    std::string out;
    for (const auto& x : xs)
        out += (out.empty() ? "" : ",") + x;
    return out;
}

} // namespace

http::device_inventory start_devices(const std::vector<std::string>& configured) {
    const auto report = kernels::cuda::enumerate_devices();
    http::device_inventory inv;
    inv.cuda_built = report.built;
    inv.cuda_driver_version = report.driver_version;
    inv.cuda_runtime_version = report.runtime_version;
    inv.cuda_error = report.error;
    spdlog::info("device cpu: the CPU engine (always available, the last resort of every "
                 "placement list)");
    for (const auto& d : report.devices) {
        inv.cuda_devices.push_back({d.index, d.name, d.sm, d.total_bytes});
        spdlog::info("device cuda:{}: {} (sm_{}, {} MiB)", d.index, d.name, d.sm,
                     d.total_bytes >> 20);
    }
    if (report.devices.empty())
        spdlog::info("no CUDA devices: {}",
                     report.error.empty() ? std::string("the runtime reports none") : report.error);
    inv.placements = actors::expand_placements(configured, static_cast<int>(report.devices.size()));
    spdlog::info("devices {} -> placements {}", joined(configured), joined(inv.placements));
    return inv;
}

std::string first_placement_reason(const http::device_inventory& inv,
                                   const std::vector<std::string>& placements,
                                   const std::string& requested) {
    const std::string first = placements.empty() ? std::string("cpu") : placements.front();
    std::string why = "first of placements " + joined(placements) + " (" +
                      (requested.empty() || requested == "auto" ? "the server's devices"
                                                                : "requested " + requested) +
                      ")";
    if (first == "cpu" && inv.cuda_devices.empty() && !inv.cuda_error.empty())
        why += "; no CUDA device: " + inv.cuda_error;
    return why;
}

} // namespace bitnet::server
