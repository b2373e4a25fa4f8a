#include "model/engine/placement/device_choice.hpp"

#include "kernels/cuda/ops.hpp"

namespace bitnet::model {

device_choice choose_device(std::string_view requested, bool built, int devices) {
    if (requested == "cpu")
        return {"cpu", "requested cpu"};
    if (!built)
        return {"cpu", requested == "cuda" ? "cuda requested but this build has no CUDA kernels"
                                           : "built without CUDA"};
    if (devices <= 0)
        return {"cpu", requested == "cuda" ? "cuda requested but no CUDA device is present"
                                           : "no CUDA device present"};
    return {"cuda:0", "CUDA device 0 of " + std::to_string(devices)};
}

bool cuda_built() noexcept {
#ifdef BITNET_WITH_CUDA
    return true;
#else
    return false;
#endif
}

int cuda_device_count() noexcept {
    // The runtime's own count (0 in a build without CUDA or on a machine without a driver).
    return static_cast<int>(kernels::cuda::enumerate_devices().devices.size());
}

} // namespace bitnet::model
