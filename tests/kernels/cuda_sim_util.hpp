// Shared pieces of the simulated-grid kernel tests (cuda_*_sim_test.cpp): device buffers over a
// kernels::cuda::ops (allocated, uploaded and downloaded through it, so the tests go through the
// same interface and launch table as the engine).
#pragma once

#include "kernels/cuda/ops.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace bitnet::test {

/// Device memory holding a copy of a host vector; freed through the ops that made it.
template <class T>
class device_vector {
public:
    device_vector(kernels::cuda::ops& o, const std::vector<T>& host)
        : ops_(&o)
        , n_(host.size())
        , p_(static_cast<T*>(o.alloc(host.size() * sizeof(T)))) {
        o.upload(p_, host.data(), n_ * sizeof(T));
    }
    device_vector(kernels::cuda::ops& o, std::size_t n)
        : device_vector(o, std::vector<T>(n)) {}
    device_vector(const device_vector&) = delete;
    device_vector& operator=(const device_vector&) = delete;
    ~device_vector() { ops_->release(p_); }

    [[nodiscard]] T* get() const { return p_; }
    [[nodiscard]] std::vector<T> download() const {
        std::vector<T> host(n_);
        ops_->download(host.data(), p_, n_ * sizeof(T));
        ops_->finish();
        return host;
    }

private:
    kernels::cuda::ops* ops_;
    std::size_t n_;
    T* p_;
};

} // namespace bitnet::test
