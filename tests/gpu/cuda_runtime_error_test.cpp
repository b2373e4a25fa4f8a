// How the CUDA runtime's errors become device_failure (kernels/cuda/runtime_error.hpp): the reason
// /health and the fallback log give. Runs without a device; the driver-dependent case reads the
// driver this machine has.
#include "kernels/cuda/runtime_error.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet::kernels::cuda;

TEST_CASE("gpu runtime errors map to the failure an operator can act on") {
    CHECK(failure_of(cudaErrorInsufficientDriver, device_failure::launch_failed) ==
          device_failure::no_driver);
    CHECK(failure_of(cudaErrorMemoryAllocation, device_failure::launch_failed) ==
          device_failure::out_of_memory);
    CHECK(failure_of(cudaErrorInvalidDevice, device_failure::launch_failed) ==
          device_failure::no_device);
    CHECK(failure_of(cudaErrorLaunchFailure, device_failure::launch_failed) ==
          device_failure::launch_failed);
    CHECK(failure_of(cudaErrorLaunchFailure, device_failure::no_device) ==
          device_failure::no_device);
    // No device: "no driver" when there is none, "no device" when a driver answers.
    int driver = 0;
    const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver != 0;
    CHECK(failure_of(cudaErrorNoDevice, device_failure::launch_failed) ==
          (has_driver ? device_failure::no_device : device_failure::no_driver));
    const std::string words = runtime_words("cudaMalloc", cudaErrorMemoryAllocation);
    CHECK(words.find("cudaMalloc: cudaErrorMemoryAllocation (") == 0);
}
