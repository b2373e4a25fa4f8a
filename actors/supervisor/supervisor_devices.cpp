// Device fallback in the supervisor (supervisor.hpp, "Device fallback"): a version whose executor
// cannot serve on its placement moves to the next placement of its list, the CPU last, so a CUDA
// device that is missing, out of memory or crashing never leaves a version failed that the CPU
// can serve. Each move is logged, counted (on_fallback: bitnet_device_fallbacks_total) and kept
// in the executor's order as the reason its next executor reports (device_reason).
#include "actors/supervisor/device_placements.hpp"
#include "actors/supervisor/supervisor_internal.hpp"
#include "model/engine/placement/device_choice.hpp"

#include <spdlog/spdlog.h>

namespace bitnet::actors {

bool advance_placement(supervisor_pointer self, version_rec& v, const std::string& why,
                       const std::string& reason_class) {
    if (!v.has_spec || self->state.stopping)
        return false;
    auto& eo = v.spec.executor;
    // "auto" ran where the executor resolved it; the same resolution says where that was.
    const std::string from =
        eo.device.empty() || eo.device == "auto"
            ? model::choose_device("auto", model::cuda_built(), model::cuda_device_count()).device
        : eo.device == "cuda" ? std::string("cuda:0")
                              : eo.device;
    const auto list = v.spec.devices.empty() ? std::vector<std::string>{from} : v.spec.devices;
    const auto next = next_placement(list, from);
    if (!next)
        return false;
    // The load error usually names its placement first ("cuda:0: ..."): said once is enough.
    std::string reason = why;
    if (reason.rfind(from + ": ", 0) == 0)
        reason.erase(0, from.size() + 2);
    ++v.device_fallbacks;
    eo.device = *next;
    eo.device_reason = "fallback from " + from + ": " + reason;
    const auto version = v.id.empty() ? std::string("new version") : "version " + v.id;
    // The device's reason may start with its class already ("no_driver: ..."): not twice.
    const bool classed = reason.rfind(reason_class + ": ", 0) == 0;
    spdlog::warn("model '{}' ({}): {} cannot serve it ({}{}); starting it on {}", v.alias, version,
                 from, classed ? std::string() : reason_class + ": ", reason, *next);
    if (self->state.opt.on_fallback)
        self->state.opt.on_fallback({v.alias, v.id, from, *next, reason_class, reason});
    return true;
}

bool fall_back(supervisor_pointer self, version_rec& v, const std::string& why,
               const std::string& reason_class) {
    if (ended(v.state) || !advance_placement(self, v, why, reason_class))
        return false;
    stop_pair(self, v);
    v.has_info = false;
    spawn_pair(self, v);
    return true;
}

void fail_on_device(supervisor_pointer self, version_rec& v, const std::string& why,
                    const std::string& reason_class) {
    if (!fall_back(self, v, why, reason_class))
        fail_version(self, v, why);
}

} // namespace bitnet::actors
