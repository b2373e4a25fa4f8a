// The CUDA runtime's errors in words and as device_failure: what device_ops.cu and
// device_enumerate.cu report. Host code over cuda_runtime.h (no device code), so the gpu suite
// tests it too; only CUDA builds include it.
#pragma once

#include "kernels/cuda/ops.hpp"

#include <cuda_runtime.h>

#include <string>

namespace bitnet::kernels::cuda {

/// "cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)".
inline std::string runtime_words(const char* call, cudaError_t e) {
    return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

/// Why a device cannot be opened or used, from the runtime's error. A machine without a driver
/// answers cudaErrorInsufficientDriver (static runtime, no libcuda) or cudaErrorNoDevice with
/// driver version 0; with a driver but no device, cudaErrorNoDevice.
inline device_failure failure_of(cudaError_t e, device_failure otherwise) {
    switch (e) {
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
        return device_failure::no_driver;
    case cudaErrorNoDevice: {
        int driver = 0;
        return cudaDriverGetVersion(&driver) == cudaSuccess && driver != 0
                   ? device_failure::no_device
                   : device_failure::no_driver;
    }
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
        return device_failure::no_device;
    case cudaErrorMemoryAllocation:
        return device_failure::out_of_memory;
    default:
        return otherwise;
    }
}

} // namespace bitnet::kernels::cuda
