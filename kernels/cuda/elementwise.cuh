// Elementwise kernels of the forward pass: the ReLU² gate of the FFN and the residual add.
// One element per thread, in a grid-stride loop so that any n fits a bounded grid.
//
// Fidelity: bit for bit. relu_sqr_gate is kernels::gated_activation's scalar definition (relu,
// then the square in float, then times u, each product rounded as written: rounded_math.hpp);
// add is one float addition per element, which nothing can fuse.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#include <cstdint>

namespace bitnet::kernels::cuda {

namespace elementwise_detail {

inline constexpr unsigned threads = 256;
/// Enough blocks to fill any current GPU several times over; larger n loops.
inline constexpr std::uint64_t max_blocks = 1u << 16;

/// The grid for n elements. constexpr so that the bodies can recompute it on the device (the
/// block does not carry the grid's size).
constexpr launch_shape shape_for(std::uint64_t n) {
    const std::uint64_t blocks = (n + threads - 1) / threads;
    return launch_shape{static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks), 1,
                        threads};
}

/// Calls f(i) for every i < n this thread owns: i = thread + k · (all threads of the grid).
template <class F>
BITNET_DEVICE void grid_stride(const block& b, std::uint64_t n, std::uint64_t n_blocks, F&& f) {
    b.threads([&](unsigned t) {
        const std::uint64_t stride = n_blocks * b.size();
        for (std::uint64_t i = static_cast<std::uint64_t>(b.x()) * b.size() + t; i < n; i += stride)
            f(i);
    });
}

} // namespace elementwise_detail

struct relu_sqr_gate_kernel {
    using args = relu_sqr_gate_args;
    static BITNET_DEVICE void body(const block& b, const args& a) {
        const auto shape = elementwise_detail::shape_for(a.n);
        elementwise_detail::grid_stride(b, a.n, shape.grid_x, [&](std::uint64_t i) {
            const float g = a.g[i];
            const float r = g > 0.0f ? g : 0.0f;
            a.z[i] = mul_rn(mul_rn(r, r), a.u[i]);
        });
    }
};

struct add_kernel {
    using args = add_args;
    static BITNET_DEVICE void body(const block& b, const args& a) {
        const auto shape = elementwise_detail::shape_for(a.n);
        elementwise_detail::grid_stride(b, a.n, shape.grid_x,
                                        [&](std::uint64_t i) { a.x[i] = add_rn(a.x[i], a.d[i]); });
    }
};

template <class Launcher>
void launch(const relu_sqr_gate_args& a, Launcher& l) {
    if (a.n != 0) // a launch of zero blocks is an error on the device
        l.template run<relu_sqr_gate_kernel>(elementwise_detail::shape_for(a.n), a);
}

template <class Launcher>
void launch(const add_args& a, Launcher& l) {
    if (a.n != 0)
        l.template run<add_kernel>(elementwise_detail::shape_for(a.n), a);
}

} // namespace bitnet::kernels::cuda
