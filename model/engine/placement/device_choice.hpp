// Where a model runs, decided once when its executor starts: the requested device ("auto",
// "cpu" or "cuda") against what this binary was built with and what the runtime sees. A plain
// function of plain values, so an order names a device and any process can resolve it.
#pragma once

#include <string>
#include <string_view>

namespace bitnet::model {

/// Where a model runs, and why there (for the log, /health and /v1/models).
struct device_choice {
    std::string device; ///< "cpu" or "cuda:0"
    std::string reason;
};

/// `requested`: "auto" | "cpu" | "cuda". CUDA only when this binary was built with it and a
/// device is present; otherwise CPU, with the reason. "cuda" without CUDA is still a CPU choice
/// (with a reason that says the request could not be honoured) rather than a start-up failure.
[[nodiscard]] device_choice choose_device(std::string_view requested, bool cuda_built,
                                          int cuda_devices);
/// Whether this binary has CUDA kernels, and how many devices the runtime sees (0 without).
[[nodiscard]] bool cuda_built() noexcept;
[[nodiscard]] int cuda_device_count() noexcept;

} // namespace bitnet::model
