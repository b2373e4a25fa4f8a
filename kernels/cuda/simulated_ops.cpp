// The simulated grid: device memory is host memory, the stream is program order, and a launch runs
// the kernel body block by block (grid.hpp). What tests use on machines without a GPU, and the
// engine's "sim" placement.
#include "kernels/cuda/all_kernels.cuh"
#include "kernels/cuda/ops.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <variant>

#include <unistd.h>

namespace bitnet::kernels::cuda {
namespace {

struct sim_launcher {
    std::uint64_t kernels = 0;
    template <class K>
    void run(const launch_shape& shape, const typename K::args& a) {
        ++kernels;
        simulate(shape, [&](const block& b) { K::body(b, a); });
    }
};

void* host_alloc(std::size_t bytes) {
    // 256-byte alignment, as cudaMalloc gives, so that vector loads written for the device are
    // aligned here too.
    void* p = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
    if (p == nullptr)
        throw device_error(device_failure::out_of_memory,
                           "simulated device: cannot allocate " + std::to_string(bytes) + " bytes");
    return p;
}

class simulated_ops final : public ops {
public:
    std::string describe() const override { return "simulated grid (host)"; }
    bool simulated() const noexcept override { return true; }
    std::uint64_t free_bytes() const override {
        const long pages = ::sysconf(_SC_AVPHYS_PAGES);
        const long page = ::sysconf(_SC_PAGESIZE);
        return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * page : 0;
    }
    void* alloc(std::size_t bytes) override { return host_alloc(bytes); }
    void release(void* p) noexcept override { std::free(p); }
    void* alloc_pinned(std::size_t bytes) override { return host_alloc(bytes); }
    void release_pinned(void* p) noexcept override { std::free(p); }
    void upload(void* device, const void* host, std::size_t bytes) override {
        if (bytes != 0)
            std::memcpy(device, host, bytes);
    }
    void download(void* host, const void* device, std::size_t bytes) override {
        if (bytes != 0)
            std::memcpy(host, device, bytes);
    }
    void copy(void* dst, const void* src, std::size_t bytes) override {
        if (bytes != 0)
            std::memmove(dst, src, bytes);
    }
    void finish() override {}

#define BITNET_SIM_RUN(name)                                                                       \
    void run(const name##_args& a) override {                                                      \
        launch(a, launcher_);                                                                      \
    }
    BITNET_CUDA_KERNELS(BITNET_SIM_RUN)
#undef BITNET_SIM_RUN

    std::uint64_t kernels_launched() const noexcept override {
        return launcher_.kernels;
    }

private:
    sim_launcher launcher_;
};

} // namespace

void ops::run_plan(const launch_plan& p) {
    for (const any_launch& l : p.launches())
        std::visit(
            [this](const auto& a) {
                if constexpr (!std::is_same_v<std::decay_t<decltype(a)>, std::monostate>)
                    run(a);
            },
            l);
}

std::unique_ptr<ops> make_simulated_ops() {
    return std::make_unique<simulated_ops>();
}

const char* failure_name(device_failure f) noexcept {
    switch (f) {
    case device_failure::not_built:
        return "not_built";
    case device_failure::no_driver:
        return "no_driver";
    case device_failure::no_device:
        return "no_device";
    case device_failure::out_of_memory:
        return "out_of_memory";
    case device_failure::launch_failed:
        return "launch_failed";
    }
    return "unknown";
}

} // namespace bitnet::kernels::cuda
