// The device side of a build without CUDA kernels (BITNET_CUDA=OFF, or no nvcc at configure):
// there is no device to open, and enumeration says why. A build with CUDA compiles
// device_ops.cu instead of this file (kernels/CMakeLists.txt).
#include "kernels/cuda/ops.hpp"

namespace bitnet::kernels::cuda {

std::unique_ptr<ops> make_device_ops(int index) {
    throw device_error(device_failure::not_built,
                       "cuda:" + std::to_string(index) + ": this build has no CUDA kernels");
}

device_report enumerate_devices() noexcept {
    device_report r;
    r.error = "this build has no CUDA kernels";
    return r;
}

} // namespace bitnet::kernels::cuda
