// What an engine asks of a CUDA device: memory, copies and the kernels of kernel_args.hpp, all
// queued in order on the one stream the ops object owns. A plain C++ header (nvcc 13 cannot
// compile the server's other headers, and the engine's host code never needs CUDA's): the real
// device's implementation is compiled by nvcc only when the toolkit exists (device_ops.cu), the
// simulated grid's (simulated_ops.cpp) always. Both launch the same kernel bodies (grid.hpp).
//
// Conventions of every kernel group header (kernels/cuda/*.cuh):
//   struct K_kernel { using args = K_args; static BITNET_DEVICE void body(const block&, const
//   args&); }; template <class Launcher> void launch(const K_args& a, Launcher& l) { l.template
//   run<K_kernel>(shape, a); }
// where `launch` picks the shape (and, for kernels with variants such as the decode GEMV and the
// batched GEMM, the kernel) from the arguments on the host.
#pragma once

#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/launch_plan.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bitnet::kernels::cuda {

/// Why a device cannot serve: the reason an operator reads in /health and the log.
enum class device_failure { not_built, no_driver, no_device, out_of_memory, launch_failed };

[[nodiscard]] const char* failure_name(device_failure f) noexcept;

class device_error : public std::runtime_error {
public:
    device_error(device_failure kind, const std::string& what)
        : std::runtime_error(what)
        , kind_(kind) {}
    [[nodiscard]] device_failure kind() const noexcept { return kind_; }

private:
    device_failure kind_;
};

/// One stream on one device (or on the simulated grid). Not thread-safe: one owner.
class ops {
public:
    virtual ~ops() = default;

    /// "cuda:0 NVIDIA H100 (sm_90, 80 GiB)" or "simulated grid (host)".
    [[nodiscard]] virtual std::string describe() const = 0;
    [[nodiscard]] virtual bool simulated() const noexcept = 0;
    /// Device memory free now (the simulation: what the host reports available).
    [[nodiscard]] virtual std::uint64_t free_bytes() const = 0;

    /// Device memory; throws device_error{out_of_memory} naming the size.
    [[nodiscard]] virtual void* alloc(std::size_t bytes) = 0;
    virtual void release(void* p) noexcept = 0;
    /// Page-locked host memory, so that copies to and from it run asynchronously at full speed.
    [[nodiscard]] virtual void* alloc_pinned(std::size_t bytes) = 0;
    virtual void release_pinned(void* p) noexcept = 0;

    /// Queued on the stream, in order with the kernels. Host sides of upload/download must stay
    /// valid until finish() (pinned memory to be asynchronous).
    virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
    virtual void download(void* host, const void* device, std::size_t bytes) = 0;
    virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
    /// Waits for everything queued; throws device_error{launch_failed} when a kernel failed.
    virtual void finish() = 0;

#define BITNET_CUDA_OPS_RUN(name) virtual void run(const name##_args& a) = 0;
    BITNET_CUDA_KERNELS(BITNET_CUDA_OPS_RUN)
#undef BITNET_CUDA_OPS_RUN

    /// Every launch of `p`, in order, one by one (through run()).
    void run_plan(const launch_plan& p);
    /// `p` as a replay: on a device one CUDA graph launch (captured from `p` the first time and
    /// kept in p.device_graph; the arguments must not change between replays, only the contents
    /// of the buffers they point to); elsewhere run_plan(p).
    virtual void replay_plan(const launch_plan& p) {
        run_plan(p);
    }

    /// Kernels this ops has launched (a launch() that runs two kernels counts two; a graph
    /// replay counts the kernels of its graph), and graph launches among them: what the
    /// benchmarks report as launches per step. 0 where an ops does not count.
    [[nodiscard]] virtual std::uint64_t kernels_launched() const noexcept {
        return 0;
    }
    [[nodiscard]] virtual std::uint64_t graphs_launched() const noexcept {
        return 0;
    }
};

/// The simulated grid on the host: every kernel body run block by block (grid.hpp).
[[nodiscard]] std::unique_ptr<ops> make_simulated_ops();
/// CUDA device `index`; throws device_error (not_built in a build without CUDA, no_driver,
/// no_device, out_of_memory) with the runtime's own words.
[[nodiscard]] std::unique_ptr<ops> make_device_ops(int index);

/// What the CUDA runtime sees, without creating a context on any device (so no free memory: asking
/// for it would make a context that holds device memory for the life of a process that may never
/// use that device; an engine checks free memory when it loads). Never throws, never aborts: a
/// build without CUDA or a machine without a driver says so in `error`.
struct device_info {
    int index = 0;
    std::string name;
    int sm = 0; ///< compute capability, major * 10 + minor
    std::uint64_t total_bytes = 0;
    double bandwidth_gbs = 0.0; ///< theoretical, from the memory clock and bus width
};
struct device_report {
    bool built = false; ///< this binary has CUDA kernels
    int runtime_version = 0;
    int driver_version = 0; ///< 0: no driver
    std::vector<device_info> devices;
    std::string error; ///< why there are none, in the runtime's words
};
[[nodiscard]] device_report enumerate_devices() noexcept;

} // namespace bitnet::kernels::cuda
