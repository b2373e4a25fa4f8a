// kernels::cuda::ops on a real device: one stream created at construction, device memory through
// cudaMalloc, pinned host memory through cudaMallocHost, copies queued with cudaMemcpyAsync on the
// stream, and the launch table: every kernel of BITNET_CUDA_KERNELS launched through its group's
// launch() (all_kernels.cuh) as `kernel_of<K>`, which runs the same body the simulated grid runs.
// Errors become device_error with the runtime's words; a kernel's failure shows at finish().
// replay_plan captures a launch plan into a CUDA graph once and launches the graph after.
#include "kernels/cuda/all_kernels.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/runtime_error.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace bitnet::kernels::cuda {
namespace {

template <class K>
__global__ void kernel_of(typename K::args a) {
    block b;
    K::body(b, a);
}

[[noreturn]] void fail(device_failure kind, const std::string& where, const char* call,
                       cudaError_t e) {
    cudaGetLastError(); // clear a non-sticky error so the next call starts clean
    throw device_error(kind, where + ": " + runtime_words(call, e));
}

struct device_launcher {
    cudaStream_t stream = nullptr;
    const std::string* name = nullptr;
    std::uint64_t kernels = 0;

    template <class K>
    void run(const launch_shape& s, const typename K::args& a) {
        ++kernels;
        kernel_of<K><<<dim3(s.grid_x, s.grid_y), s.threads, 0, stream>>>(a);
        // A bad configuration shows at once; a fault inside the kernel shows at finish().
        if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
            fail(device_failure::launch_failed, *name, "kernel launch", e);
    }
};

/// A launch plan as the device replays it: the instantiated graph and its kernel count.
struct device_graph {
    cudaGraphExec_t exec = nullptr;
    std::uint64_t kernels = 0;
    int device = 0;
    ~device_graph() {
        if (exec != nullptr) {
            cudaSetDevice(device);
            cudaGraphExecDestroy(exec);
        }
    }
};

std::string gib(std::uint64_t bytes) {
    return std::to_string((bytes + (1ull << 29)) >> 30) + " GiB";
}

class device_ops final : public ops {
public:
    explicit device_ops(int index)
        : index_(index)
        , name_("cuda:" + std::to_string(index)) {
        int n = 0;
        if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess)
            fail(failure_of(e, device_failure::no_device), name_, "cudaGetDeviceCount", e);
        if (index < 0 || index >= n)
            throw device_error(device_failure::no_device,
                               name_ + ": the runtime sees " + std::to_string(n) + " device(s)");
        select();
        cudaDeviceProp p{};
        if (const cudaError_t e = cudaGetDeviceProperties(&p, index); e != cudaSuccess)
            fail(failure_of(e, device_failure::no_device), name_, "cudaGetDeviceProperties", e);
        describe_ = name_ + " " + p.name + " (sm_" + std::to_string(p.major * 10 + p.minor) + ", " +
                    gib(p.totalGlobalMem) + ")";
        // Non-blocking: the stream does not wait on the legacy default stream, so several ops
        // objects (executors) on one device overlap.
        if (const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
            e != cudaSuccess)
            fail(failure_of(e, device_failure::no_device), name_, "cudaStreamCreate", e);
        launcher_.stream = stream_;
        launcher_.name = &name_;
    }
    ~device_ops() override {
        cudaSetDevice(index_);
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
    }
    device_ops(const device_ops&) = delete;
    device_ops& operator=(const device_ops&) = delete;

    std::string describe() const override { return describe_; }
    bool simulated() const noexcept override { return false; }
    std::uint64_t free_bytes() const override {
        select();
        std::size_t free = 0;
        std::size_t total = 0;
        if (const cudaError_t e = cudaMemGetInfo(&free, &total); e != cudaSuccess)
            fail(failure_of(e, device_failure::launch_failed), name_, "cudaMemGetInfo", e);
        return free;
    }

    void* alloc(std::size_t bytes) override {
        select();
        void* p = nullptr;
        if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess)
            fail(failure_of(e, device_failure::out_of_memory),
                 name_ + ": cannot allocate " + std::to_string(bytes) + " bytes", "cudaMalloc", e);
        return p;
    }
    void release(void* p) noexcept override {
        if (p == nullptr)
            return;
        cudaSetDevice(index_);
        cudaFree(p);
    }
    void* alloc_pinned(std::size_t bytes) override {
        select();
        void* p = nullptr;
        if (const cudaError_t e = cudaMallocHost(&p, bytes); e != cudaSuccess)
            fail(failure_of(e, device_failure::out_of_memory),
                 name_ + ": cannot allocate " + std::to_string(bytes) + " pinned bytes",
                 "cudaMallocHost", e);
        return p;
    }
    void release_pinned(void* p) noexcept override {
        if (p != nullptr)
            cudaFreeHost(p);
    }

    void upload(void* device, const void* host, std::size_t bytes) override {
        copy_async(device, host, bytes, cudaMemcpyHostToDevice);
    }
    void download(void* host, const void* device, std::size_t bytes) override {
        copy_async(host, device, bytes, cudaMemcpyDeviceToHost);
    }
    void copy(void* dst, const void* src, std::size_t bytes) override {
        copy_async(dst, src, bytes, cudaMemcpyDeviceToDevice);
    }
    void finish() override {
        select();
        if (const cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaStreamSynchronize", e);
    }

    void replay_plan(const launch_plan& p) override {
        select();
        if (!p.device_graph)
            p.device_graph = capture(p);
        const auto& g = *static_cast<const device_graph*>(p.device_graph.get());
        if (const cudaError_t e = cudaGraphLaunch(g.exec, stream_); e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaGraphLaunch", e);
        launcher_.kernels += g.kernels;
        ++graphs_;
    }
    std::uint64_t kernels_launched() const noexcept override { return launcher_.kernels; }
    std::uint64_t graphs_launched() const noexcept override { return graphs_; }

#define BITNET_DEVICE_RUN(kname)                                                                   \
    void run(const kname##_args& a) override {                                                     \
        select();                                                                                  \
        launch(a, launcher_);                                                                      \
    }
    BITNET_CUDA_KERNELS(BITNET_DEVICE_RUN)
#undef BITNET_DEVICE_RUN

private:
    // The current device is per host thread, and an executor's calls may come from any of the
    // actor system's threads: every entry point selects ours (a no-op when it already is).
    void select() const {
        if (const cudaError_t e = cudaSetDevice(index_); e != cudaSuccess)
            fail(failure_of(e, device_failure::no_device), name_, "cudaSetDevice", e);
    }
    /// The plan's launches captured from the stream into a graph (nothing runs while capturing)
    /// and instantiated. A launch() that throws (bad arguments) ends the capture first.
    std::shared_ptr<void> capture(const launch_plan& p) {
        if (const cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
            e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaStreamBeginCapture", e);
        const std::uint64_t before = launcher_.kernels;
        cudaGraph_t graph = nullptr;
        try {
            run_plan(p);
        } catch (...) {
            cudaStreamEndCapture(stream_, &graph);
            if (graph != nullptr)
                cudaGraphDestroy(graph);
            launcher_.kernels = before;
            throw;
        }
        const std::uint64_t kernels = launcher_.kernels - before;
        launcher_.kernels = before; // counted when replayed
        if (const cudaError_t e = cudaStreamEndCapture(stream_, &graph); e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaStreamEndCapture", e);
        auto g = std::make_shared<device_graph>();
        g->device = index_;
        g->kernels = kernels;
        const cudaError_t e = cudaGraphInstantiate(&g->exec, graph, 0);
        cudaGraphDestroy(graph);
        if (e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaGraphInstantiate", e);
        return g;
    }
    void copy_async(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
        if (bytes == 0)
            return;
        select();
        if (const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, stream_); e != cudaSuccess)
            fail(device_failure::launch_failed, name_, "cudaMemcpyAsync", e);
    }

    int index_;
    std::string name_;
    std::string describe_;
    cudaStream_t stream_ = nullptr;
    device_launcher launcher_;
    std::uint64_t graphs_ = 0;
};

} // namespace

std::unique_ptr<ops> make_device_ops(int index) {
    return std::make_unique<device_ops>(index);
}

} // namespace bitnet::kernels::cuda
