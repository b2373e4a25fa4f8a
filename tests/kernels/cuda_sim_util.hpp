// Shared pieces of the simulated-grid kernel tests (cuda_*_sim_test.cpp): device buffers over a
// kernels::cuda::ops (allocated, uploaded and downloaded through it, so the tests go through the
// same interface and launch table as the engine), and float comparisons in ulps.
#pragma once

#include "kernels/cuda/ops.hpp"

#include <bit>
#include <cmath>
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

/// Distance in units in the last place between two finite floats (0 when bitwise equal; 0 for +0
/// and -0 too, which only a bitwise comparison tells apart).
inline std::int64_t ulp_distance(float a, float b) {
    const auto key = [](float f) {
        const auto u = static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(f));
        return u & 0x80000000 ? -(u & 0x7fffffff) : u;
    };
    const std::int64_t d = key(a) - key(b);
    return d < 0 ? -d : d;
}

} // namespace bitnet::test
