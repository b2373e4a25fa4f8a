// Loading a model on a placement: "cpu" (the CPU engine), "cuda:N" (the CUDA engine on device N)
// or "sim:N" (the CUDA engine on the simulated grid: every CUDA kernel body run on the host; slow,
// for tests and for checking the CUDA engine on machines without a GPU). The executor calls this
// with the device its order names; a CUDA placement that cannot load fails with a reason that
// says why (no driver, no device, out of memory, format unsupported), and the supervisor falls
// back to the CPU.
#pragma once

#include "common/error.hpp"
#include "model/engine/engine.hpp"

#include <memory>
#include <string_view>

namespace bitnet::model {

/// A parsed placement: kind "cpu", "cuda" or "sim", and the device index (0 for the CPU).
struct placement {
    std::string kind = "cpu";
    int index = 0;
    [[nodiscard]] std::string name() const {
        return kind == "cpu" ? kind : kind + ":" + std::to_string(index);
    }
};

/// "cpu" | "cuda" (= cuda:0) | "cuda:N" | "sim:N"; anything else is invalid_argument.
[[nodiscard]] result<placement> parse_placement(std::string_view text);

/// The model of `opt` on `where`. CUDA failures are errc::unsupported with the device's reason.
[[nodiscard]] result<std::unique_ptr<engine>> load_engine_on(const engine_options& opt,
                                                             const placement& where);

} // namespace bitnet::model
