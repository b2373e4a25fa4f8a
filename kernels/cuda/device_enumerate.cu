// What the CUDA runtime sees (ops.hpp's enumerate_devices), for the startup log, /health and the
// placement choice. Any error, a missing driver included, is an empty list with the runtime's
// words: never a throw, never an abort.
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/runtime_error.hpp"

#include <cuda_runtime.h>

namespace bitnet::kernels::cuda {

device_report enumerate_devices() noexcept {
    device_report r;
    r.built = true;
    try {
        cudaRuntimeGetVersion(&r.runtime_version);
        if (cudaDriverGetVersion(&r.driver_version) != cudaSuccess)
            r.driver_version = 0;
        int n = 0;
        if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
            r.error = runtime_words("cudaGetDeviceCount", e);
            cudaGetLastError(); // not sticky: clear it for later calls
            return r;
        }
        if (n == 0) {
            r.error = "cudaGetDeviceCount: no CUDA device";
            return r;
        }
        for (int i = 0; i < n; ++i) {
            cudaDeviceProp p{};
            if (const cudaError_t e = cudaGetDeviceProperties(&p, i); e != cudaSuccess) {
                r.error = runtime_words("cudaGetDeviceProperties", e);
                cudaGetLastError();
                continue;
            }
            device_info d;
            d.index = i;
            d.name = p.name;
            d.sm = p.major * 10 + p.minor;
            d.total_bytes = p.totalGlobalMem;
            // CUDA 13 dropped cudaDeviceProp::memoryClockRate; the attribute remains (kHz).
            int clock_khz = 0;
            int bus_bits = 0;
            cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, i);
            cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
            // Double data rate: two transfers per clock of bus_bits / 8 bytes.
            d.bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
            cudaGetLastError();
            r.devices.push_back(std::move(d));
        }
    } catch (...) {
        r.error = "enumerating CUDA devices failed (out of host memory)";
    }
    return r;
}

} // namespace bitnet::kernels::cuda
