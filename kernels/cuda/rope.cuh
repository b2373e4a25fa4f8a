// Rotary position embedding on the device: one thread per rotated pair of one head of one row.
//
// Fidelity: bit for bit with kernels::rope_apply, NEOX and normal styles, any head_dim (an odd
// one leaves its last element alone, as the CPU does). The angles are not computed here: the
// host fills the table with kernels::rope_angles_for, so cos and sin are the CPU's own floats,
// and each rotated element is the CPU's expression (two products, then a sum or a difference),
// every operation rounded as written (rounded_math.hpp: nvcc would otherwise fuse one product
// into an FMA and round once where the CPU rounds twice).
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct rope_kernel {
    using args = rope_args;
    static constexpr unsigned threads = 128;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned half = a.head_dim / 2;
        const std::uint64_t pairs = static_cast<std::uint64_t>(a.n_heads) * half;
        const unsigned r = b.y();
        float* row = a.x + static_cast<std::size_t>(r) * a.ldx;
        const float* cs = a.cos_sin + static_cast<std::size_t>(a.pos[r]) * a.head_dim;
        b.threads([&](unsigned t) {
            const std::uint64_t k = static_cast<std::uint64_t>(b.x()) * b.size() + t;
            if (k >= pairs)
                return;
            const auto h = static_cast<unsigned>(k / half);
            const auto i = static_cast<unsigned>(k % half);
            float* v = row + static_cast<std::size_t>(h) * a.head_dim;
            const unsigned i0 = a.neox ? i : 2 * i;
            const unsigned i1 = a.neox ? i + half : 2 * i + 1;
            const float c = cs[i];
            const float s = cs[half + i];
            const float x0 = v[i0];
            const float x1 = v[i1];
            v[i0] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
            v[i1] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
        });
    }
};

template <class Launcher>
void launch(const rope_args& a, Launcher& l) {
    const std::uint64_t pairs = static_cast<std::uint64_t>(a.n_heads) * (a.head_dim / 2);
    if (a.n_rows == 0 || pairs == 0)
        return; // a launch of zero blocks is an error on the device
    const std::uint64_t blocks = (pairs + rope_kernel::threads - 1) / rope_kernel::threads;
    if (blocks > 0x7fffffffu || a.n_rows > 65535u)
        throw std::invalid_argument("rope: too many heads or rows for one launch");
    l.template run<rope_kernel>(
        launch_shape{static_cast<unsigned>(blocks), a.n_rows, rope_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
