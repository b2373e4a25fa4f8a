// RMSNorm on the device, one block per output row.
//
// Fidelity: bit for bit with kernels::rms_norm, by construction. The CPU sums the float squares
// in double strictly in index order, a chain a block of threads cannot reproduce without running
// it on one thread (n dependent double adds: ~10 µs for n = 2560, which would dominate a decode
// step). So the block sums in its own fixed order (per-thread strided partials, the warp
// butterfly, then the warps in index order) and checks whether that order can matter: both sums
// are within (n-1)·2^-53 relative of the exact one, and the value the CPU rounds to float is
// mean + eps; when every double within twice that distance of ours rounds to the same float
// (same_float_within), the CPU's does too, and the scale is the same bits. Otherwise (about once
// in 10^5 rows) thread 0 redoes the CPU's sequential sum. Everything after the float conversion is
// the CPU's expression with each operation rounded as written (rounded_math.hpp).
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#include <cstddef>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct rms_norm_kernel {
    using args = rms_norm_args;
    static constexpr unsigned threads = 256;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned r = b.x();
        const unsigned n = a.n;
        const unsigned nt = b.size();
        const std::size_t src = a.rows != nullptr ? static_cast<std::size_t>(a.rows[r]) : r;
        const float* x = a.x + src * a.ldx;
        float* y = a.y + static_cast<std::size_t>(r) * a.ldy;

        BITNET_SHARED double warp_sums[max_threads / warp_size];
        BITNET_SHARED float scale_shared;
        per_thread<double> part;
        b.threads([&](unsigned t) {
            double s = 0.0;
            for (unsigned i = t; i < n; i += nt)
                s += static_cast<double>(mul_rn(x[i], x[i]));
            part[t] = s;
        });
        warp_sum(b, part);
        b.threads([&](unsigned t) {
            if (t % warp_size == 0)
                warp_sums[t / warp_size] = part[t];
        });
        b.sync();
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            double sum = 0.0;
            for (unsigned w = 0; w < nt / warp_size; ++w)
                sum += warp_sums[w];
            double v = sum / static_cast<double>(n) + static_cast<double>(a.eps);
            if (!same_float_within(v, order_tolerance(n, nt, 2.0))) {
                sum = 0.0; // the CPU's order, for the rare row where the order shows
                for (unsigned i = 0; i < n; ++i)
                    sum += static_cast<double>(mul_rn(x[i], x[i]));
                v = sum / static_cast<double>(n) + static_cast<double>(a.eps);
            }
            scale_shared = rsqrt_rn(static_cast<float>(v));
        });
        b.sync();
        b.threads([&](unsigned t) {
            const float scale = scale_shared;
            for (unsigned i = t; i < n; i += nt)
                y[i] = mul_rn(mul_rn(x[i], scale), a.weight[i]);
        });
    }
};

template <class Launcher>
void launch(const rms_norm_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n == 0)
        return; // a launch of zero blocks is an error on the device
    l.template run<rms_norm_kernel>(launch_shape{a.n_rows, 1, rms_norm_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
